CREATE TABLE "usage_claim_writes" (
	"claim" text PRIMARY KEY NOT NULL,
	"charged" text NOT NULL,
	"version" bigint,
	"created_at" bigint NOT NULL
);
