PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_settings` (
	`tenant_id` integer DEFAULT 0 NOT NULL,
	`key` text NOT NULL,
	`value` text NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `key`)
);
--> statement-breakpoint
INSERT INTO `__new_settings`("tenant_id", "key", "value", "updated_at") SELECT 0, "key", "value", "updated_at" FROM `settings`;--> statement-breakpoint
DROP TABLE `settings`;--> statement-breakpoint
ALTER TABLE `__new_settings` RENAME TO `settings`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
ALTER TABLE `provider_keys` ADD `tenant_id` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `operation_log` ADD `tenant_id` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `notices` ADD `tenant_id` integer DEFAULT 0 NOT NULL;