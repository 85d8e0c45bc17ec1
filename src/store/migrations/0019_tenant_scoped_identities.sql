-- Emails and names become unique per tree (root_id: the first segment of the path, the
-- owner whose tree the account is in) instead of across the deployment; owners' emails
-- stay unique among owners. SQLite cannot add a NOT NULL column without a default, so
-- the table is rebuilt with root_id worked out from each row's path. Live emails and
-- names were unique deployment-wide before, so no new index can find a duplicate.
CREATE TABLE `__new_accounts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`parent_id` integer,
	`path` text DEFAULT '' NOT NULL,
	`root_id` integer NOT NULL,
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
INSERT INTO `__new_accounts` ("id", "parent_id", "path", "root_id", "depth", "is_owner", "email", "name", "alias", "billing_email", "rates", "rpm", "rph", "rpd", "tpm", "tph", "tpd", "daily_limit", "hard_limit", "soft_limit", "model_limits", "allow_ips", "allow_models", "resources", "key_hash", "key_prefix", "created_at", "updated_at", "deleted_at")
SELECT "id", "parent_id", "path", CAST(substr("path", 2, instr(substr("path", 2), '/') - 1) AS INTEGER), "depth", "is_owner", "email", "name", "alias", "billing_email", "rates", "rpm", "rph", "rpd", "tpm", "tph", "tpd", "daily_limit", "hard_limit", "soft_limit", "model_limits", "allow_ips", "allow_models", "resources", "key_hash", "key_prefix", "created_at", "updated_at", "deleted_at" FROM `accounts`;
--> statement-breakpoint
-- The id sequence carries over as it was (not as the highest copied id): an id once
-- handed out is never handed out again. DROP TABLE forgets the old table's entry and
-- RENAME renames the new one's, so the old entry is moved onto the new table first.
DELETE FROM sqlite_sequence WHERE name = '__new_accounts';
--> statement-breakpoint
UPDATE sqlite_sequence SET name = '__new_accounts' WHERE name = 'accounts';
--> statement-breakpoint
DROP TABLE `accounts`;
--> statement-breakpoint
ALTER TABLE `__new_accounts` RENAME TO `accounts`;
--> statement-breakpoint
CREATE UNIQUE INDEX `accounts_key_hash` ON `accounts` (`key_hash`);--> statement-breakpoint
CREATE UNIQUE INDEX `accounts_root_email_live` ON `accounts` (`root_id`,`email`) WHERE deleted_at IS NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `accounts_root_name_live` ON `accounts` (`root_id`,`name`) WHERE deleted_at IS NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `accounts_owner_email_live` ON `accounts` (`email`) WHERE deleted_at IS NULL AND is_owner;--> statement-breakpoint
CREATE INDEX `accounts_parent` ON `accounts` (`parent_id`);--> statement-breakpoint
CREATE INDEX `accounts_path` ON `accounts` (`path`);
