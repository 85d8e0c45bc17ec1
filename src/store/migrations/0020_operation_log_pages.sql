CREATE INDEX `operation_log_tenant_at` ON `operation_log` (`tenant_id`,`at`);--> statement-breakpoint
CREATE INDEX `operation_log_target_at` ON `operation_log` (`target_id`,`at`);