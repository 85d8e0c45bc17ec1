CREATE TABLE `accounts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`parent_id` integer,
	`path` text DEFAULT '' NOT NULL,
	`depth` integer NOT NULL,
	`is_owner` integer DEFAULT false NOT NULL,
	`email` text NOT NULL,
	`name` text NOT NULL,
	`alias` text,
	`billing_email` text,
	`rates` real DEFAULT 1 NOT NULL,
	`rpm` integer,
	`rph` integer,
	`rpd` integer,
	`tpm` integer,
	`tph` integer,
	`tpd` integer,
	`daily_limit` real,
	`hard_limit` real,
	`soft_limit` real,
	`model_limits` text,
	`allow_ips` text,
	`allow_models` text,
	`resources` text,
	`key_hash` text NOT NULL,
	`key_prefix` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`deleted_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `accounts_key_hash` ON `accounts` (`key_hash`);--> statement-breakpoint
CREATE UNIQUE INDEX `accounts_email_live` ON `accounts` (`email`) WHERE deleted_at IS NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `accounts_name_live` ON `accounts` (`name`) WHERE deleted_at IS NULL;--> statement-breakpoint
CREATE INDEX `accounts_parent` ON `accounts` (`parent_id`);--> statement-breakpoint
CREATE INDEX `accounts_path` ON `accounts` (`path`);--> statement-breakpoint
CREATE TABLE `credit_grants` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account_id` integer NOT NULL,
	`amount` integer NOT NULL,
	`remaining` integer NOT NULL,
	`expires_at` integer,
	`granted_by` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `credit_grants_account` ON `credit_grants` (`account_id`,`expires_at`);--> statement-breakpoint
CREATE TABLE `settings` (
	`key` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL,
	`updated_at` integer NOT NULL
);
