CREATE TABLE `operation_log` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`at` integer NOT NULL,
	`actor_id` integer,
	`action` text NOT NULL,
	`target_id` integer,
	`details` text DEFAULT '{}' NOT NULL,
	`ip` text
);
--> statement-breakpoint
CREATE INDEX `operation_log_at` ON `operation_log` (`at`);--> statement-breakpoint
CREATE INDEX `operation_log_actor` ON `operation_log` (`actor_id`);