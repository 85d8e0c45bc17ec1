CREATE TABLE `usage_daily` (
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
);
--> statement-breakpoint
CREATE INDEX `usage_daily_day` ON `usage_daily` (`day`);