CREATE TABLE "usage_copies" (
	"request_id" text NOT NULL,
	"created_at" bigint NOT NULL,
	"endpoint" text NOT NULL,
	"status" integer NOT NULL,
	"writer" text NOT NULL,
	"written_at" bigint NOT NULL,
	CONSTRAINT "usage_copies_request_id_created_at_endpoint_status_pk" PRIMARY KEY("request_id","created_at","endpoint","status")
);
