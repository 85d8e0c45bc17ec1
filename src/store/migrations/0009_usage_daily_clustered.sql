-- Bills read every rollup row of an audience over a range. As a rowid table each row
-- was a lookup from the primary-key index into the table; WITHOUT ROWID stores the
-- rows in primary-key order (account, day, model), so a bill reads them in one scan.
CREATE TABLE `__new_usage_daily` (
	`account_id` integer NOT NULL,
	`day` text NOT NULL,
	`model` text NOT NULL,
	`requests` integer DEFAULT 0 NOT NULL,
	`prompt_tokens` integer DEFAULT 0 NOT NULL,
	`completion_tokens` integer DEFAULT 0 NOT NULL,
	`reasoning_tokens` integer DEFAULT 0 NOT NULL,
	`cache_read_tokens` integer DEFAULT 0 NOT NULL,
	`cache_write_tokens` integer DEFAULT 0 NOT NULL,
	`cost_nanos` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`account_id`, `day`, `model`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_usage_daily` (`account_id`, `day`, `model`, `requests`, `prompt_tokens`, `completion_tokens`, `reasoning_tokens`, `cache_read_tokens`, `cache_write_tokens`, `cost_nanos`)
SELECT `account_id`, `day`, `model`, `requests`, `prompt_tokens`, `completion_tokens`, `reasoning_tokens`, `cache_read_tokens`, `cache_write_tokens`, `cost_nanos` FROM `usage_daily`;
--> statement-breakpoint
DROP TABLE `usage_daily`;
--> statement-breakpoint
ALTER TABLE `__new_usage_daily` RENAME TO `usage_daily`;
--> statement-breakpoint
CREATE INDEX `usage_daily_day` ON `usage_daily` (`day`);
