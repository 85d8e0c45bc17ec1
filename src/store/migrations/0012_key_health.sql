CREATE TABLE `key_health` (
	`key_id` integer PRIMARY KEY NOT NULL,
	`tenant_id` integer DEFAULT 0 NOT NULL,
	`day` text NOT NULL,
	`requests` integer DEFAULT 0 NOT NULL,
	`errors` integer DEFAULT 0 NOT NULL,
	`latency_ms` integer DEFAULT 0 NOT NULL,
	`spend_nanos` integer DEFAULT 0 NOT NULL,
	`last_error_at` integer,
	`last_error_status` integer,
	`last_error_message` text,
	`last_success_at` integer
);
--> statement-breakpoint
CREATE INDEX `key_health_tenant` ON `key_health` (`tenant_id`);