CREATE TABLE `upstream_objects` (
	`object_id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`account_id` integer NOT NULL,
	`key_id` integer NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `upstream_objects_account` ON `upstream_objects` (`account_id`,`kind`);