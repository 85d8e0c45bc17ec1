-- Emails and names become unique per tree (root_id: the first segment of the path, the
-- owner whose tree the account is in) instead of across the deployment; owners' emails
-- stay unique among owners. The column is filled from each row's path before it becomes
-- NOT NULL. Live emails and names were unique deployment-wide before, so no new index
-- can find a duplicate.
ALTER TABLE "accounts" ADD COLUMN "root_id" integer;--> statement-breakpoint
UPDATE "accounts" SET "root_id" = COALESCE(NULLIF(split_part("path", '/', 2), '')::integer, 0);--> statement-breakpoint
ALTER TABLE "accounts" ALTER COLUMN "root_id" SET NOT NULL;--> statement-breakpoint
DROP INDEX "accounts_email_live";--> statement-breakpoint
DROP INDEX "accounts_name_live";--> statement-breakpoint
CREATE UNIQUE INDEX "accounts_root_email_live" ON "accounts" USING btree ("root_id","email") WHERE deleted_at IS NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "accounts_root_name_live" ON "accounts" USING btree ("root_id","name") WHERE deleted_at IS NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "accounts_owner_email_live" ON "accounts" USING btree ("email") WHERE deleted_at IS NULL AND is_owner;
