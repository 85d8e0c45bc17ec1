CREATE TABLE "watched_writes" (
	"id" integer PRIMARY KEY NOT NULL,
	"writes" bigint DEFAULT 0 NOT NULL
);
