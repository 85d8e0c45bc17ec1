-- Before this index a call could be stored twice (an append to Redis whose answer was
-- lost, written again by its instance, then claimed from Redis): each call is kept once,
-- the later rows go, their figures leave the daily rollups (which count the calls that
-- count in bills, as `dailyRollups` does), and what they charged is given back as credit.
CREATE TEMP TABLE usage_repeats ON COMMIT DROP AS SELECT * FROM usage_events WHERE id NOT IN (SELECT min(id) FROM usage_events GROUP BY request_id, created_at, endpoint, status);
--> statement-breakpoint
UPDATE usage_daily SET requests = usage_daily.requests - r.requests, prompt_tokens = usage_daily.prompt_tokens - r.prompt, completion_tokens = usage_daily.completion_tokens - r.completion, reasoning_tokens = usage_daily.reasoning_tokens - r.reasoning, cache_read_tokens = usage_daily.cache_read_tokens - r.cache_read, cache_write_tokens = usage_daily.cache_write_tokens - r.cache_write, cost_nanos = usage_daily.cost_nanos - r.cost
FROM (SELECT account_id, day, coalesce(effective_model, requested_model, '') AS model, count(*) AS requests, sum(prompt_tokens) AS prompt, sum(completion_tokens) AS completion, sum(reasoning_tokens) AS reasoning, sum(cache_read_tokens) AS cache_read, sum(cache_write_tokens) AS cache_write, sum(cost_nanos) AS cost
      FROM usage_repeats WHERE status < 400 OR cost_nanos > 0 OR prompt_tokens + completion_tokens > 0 GROUP BY 1, 2, 3) AS r
WHERE usage_daily.account_id = r.account_id AND usage_daily.day = r.day AND usage_daily.model = r.model;
--> statement-breakpoint
DELETE FROM usage_daily WHERE requests <= 0 AND cost_nanos = 0;
--> statement-breakpoint
INSERT INTO credit_grants (account_id, amount, remaining, expires_at, granted_by, created_at)
SELECT account_id, sum(cost_nanos), sum(cost_nanos), NULL, NULL, (extract(epoch FROM clock_timestamp()) * 1000)::bigint FROM usage_repeats GROUP BY account_id HAVING sum(cost_nanos) > 0;
--> statement-breakpoint
DELETE FROM usage_events WHERE id IN (SELECT id FROM usage_repeats);
--> statement-breakpoint
CREATE UNIQUE INDEX "usage_events_identity" ON "usage_events" USING btree ("request_id","created_at","endpoint","status");
