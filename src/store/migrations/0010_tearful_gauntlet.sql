CREATE TABLE `request_log` (
	`request_id` text PRIMARY KEY NOT NULL,
	`tenant_id` integer DEFAULT 0 NOT NULL,
	`account_id` integer NOT NULL,
	`created_at` integer NOT NULL,
	`family` text NOT NULL,
	`endpoint` text NOT NULL,
	`requested_model` text,
	`effective_model` text,
	`stream` integer DEFAULT false NOT NULL,
	`status` integer NOT NULL,
	`attempts` text DEFAULT '[]' NOT NULL,
	`key_ids` text DEFAULT ',' NOT NULL,
	`levels` text DEFAULT ',' NOT NULL,
	`ttfb_ms` integer,
	`duration_ms` integer NOT NULL,
	`prompt_tokens` integer DEFAULT 0 NOT NULL,
	`completion_tokens` integer DEFAULT 0 NOT NULL,
	`cache_read_tokens` integer DEFAULT 0 NOT NULL,
	`cache_write_tokens` integer DEFAULT 0 NOT NULL,
	`reasoning_tokens` integer DEFAULT 0 NOT NULL,
	`cost_nanos` integer DEFAULT 0 NOT NULL,
	`source` text NOT NULL,
	`client_ip` text,
	`user_agent` text
);
--> statement-breakpoint
CREATE INDEX `request_log_tenant_created` ON `request_log` (`tenant_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `request_log_account_created` ON `request_log` (`account_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `request_log_created` ON `request_log` (`created_at`);