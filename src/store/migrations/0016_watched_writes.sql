CREATE TABLE `watched_writes` (
	`id` integer PRIMARY KEY NOT NULL,
	`writes` integer DEFAULT 0 NOT NULL
);
