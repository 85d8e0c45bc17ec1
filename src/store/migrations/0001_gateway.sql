CREATE TABLE `provider_keys` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text DEFAULT '' NOT NULL,
	`level` integer NOT NULL,
	`provider` text NOT NULL,
	`secret_sealed` text NOT NULL,
	`partial_key` text NOT NULL,
	`no_sleep` integer DEFAULT false NOT NULL,
	`status` integer DEFAULT true NOT NULL,
	`sleeping` integer DEFAULT false NOT NULL,
	`sleep_reason` text,
	`sleep_until` integer,
	`sleep_count` integer DEFAULT 0 NOT NULL,
	`config` text DEFAULT '{"provider_type":"standard"}' NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `provider_keys_level` ON `provider_keys` (`level`);--> statement-breakpoint
CREATE TABLE `usage_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`request_id` text NOT NULL,
	`account_id` integer NOT NULL,
	`day` text NOT NULL,
	`created_at` integer NOT NULL,
	`endpoint` text NOT NULL,
	`requested_model` text,
	`effective_model` text,
	`level` integer,
	`key_id` integer,
	`status` integer NOT NULL,
	`stream` integer DEFAULT false NOT NULL,
	`prompt_tokens` integer DEFAULT 0 NOT NULL,
	`completion_tokens` integer DEFAULT 0 NOT NULL,
	`cache_read_tokens` integer DEFAULT 0 NOT NULL,
	`cache_write_tokens` integer DEFAULT 0 NOT NULL,
	`reasoning_tokens` integer DEFAULT 0 NOT NULL,
	`source` text NOT NULL,
	`latency_ms` integer NOT NULL,
	`cost_nanos` integer DEFAULT 0 NOT NULL,
	`extra` text
);
--> statement-breakpoint
CREATE INDEX `usage_events_account_day` ON `usage_events` (`account_id`,`day`);--> statement-breakpoint
CREATE INDEX `usage_events_day` ON `usage_events` (`day`);