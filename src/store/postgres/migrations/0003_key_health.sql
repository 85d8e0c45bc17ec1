CREATE TABLE "key_health" (
	"key_id" integer PRIMARY KEY NOT NULL,
	"tenant_id" integer DEFAULT 0 NOT NULL,
	"day" text NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"errors" bigint DEFAULT 0 NOT NULL,
	"latency_ms" bigint DEFAULT 0 NOT NULL,
	"spend_nanos" bigint DEFAULT 0 NOT NULL,
	"last_error_at" bigint,
	"last_error_status" integer,
	"last_error_message" text,
	"last_success_at" bigint
);
--> statement-breakpoint
CREATE INDEX "key_health_tenant" ON "key_health" USING btree ("tenant_id");