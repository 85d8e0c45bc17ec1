CREATE TABLE `usage_copies` (
	`request_id` text NOT NULL,
	`created_at` integer NOT NULL,
	`endpoint` text NOT NULL,
	`status` integer NOT NULL,
	`writer` text NOT NULL,
	`written_at` integer NOT NULL,
	PRIMARY KEY(`request_id`, `created_at`, `endpoint`, `status`)
);
