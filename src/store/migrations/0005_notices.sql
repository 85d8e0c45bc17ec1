CREATE TABLE `notices` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`title` text NOT NULL,
	`content` text NOT NULL,
	`author_id` integer NOT NULL,
	`target_id` integer,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `notices_target` ON `notices` (`target_id`,`expires_at`);--> statement-breakpoint
CREATE INDEX `notices_author` ON `notices` (`author_id`);