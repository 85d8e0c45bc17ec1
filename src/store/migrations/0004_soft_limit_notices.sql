CREATE TABLE `soft_limit_notices` (
	`account_id` integer NOT NULL,
	`month` text NOT NULL,
	`sent_at` integer NOT NULL,
	`recipient` text NOT NULL,
	PRIMARY KEY(`account_id`, `month`)
);
