CREATE TABLE `usage_claim_writes` (
	`claim` text PRIMARY KEY NOT NULL,
	`charged` text NOT NULL,
	`version` integer,
	`created_at` integer NOT NULL
);
