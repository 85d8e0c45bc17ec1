import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { badRequest, tooLarge } from "../core/errors.ts";
import { randomBase62 } from "../core/ids.ts";

/** A multipart body written to disk, with its small text fields read on the way. */
export interface SpooledForm {
  path: string;
  size: number;
  contentType: string;
  /** Text fields (parts without a filename), at most 64 KiB each. */
  fields: Map<string, string>;
  /** Number of file parts. */
  files: number;
  remove(): void;
}

const MAX_FIELD = 64 * 1024;
const CRLF2 = Buffer.from("\r\n\r\n");

function boundaryOf(contentType: string): string {
  const match = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const boundary = match?.[1] ?? match?.[2];
  if (!/^multipart\/form-data/i.test(contentType) || !boundary) {
    throw badRequest("This endpoint takes multipart/form-data with a boundary");
  }
  return boundary;
}

/**
 * Incrementally scans a multipart body for its text fields, never holding a file
 * part in memory: only the delimiter-sized tail of the previous chunk is kept.
 */
function createFieldScanner(boundary: string) {
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  const fields = new Map<string, string>();
  let files = 0;
  // The body starts with `--boundary`; prefixing CRLF lets one delimiter shape match every part.
  let pending: Buffer = Buffer.from("\r\n");
  let state: "preamble" | "headers" | "value" | "skip" | "done" = "preamble";
  let name = "";
  let value: Buffer[] = [];
  let valueSize = 0;

  const step = (): boolean => {
    if (state === "preamble" || state === "value" || state === "skip") {
      const at = pending.indexOf(delimiter);
      if (at < 0) {
        const keep = Math.max(0, pending.length - delimiter.length + 1);
        if (state === "value" && keep > 0) {
          valueSize += keep;
          if (valueSize <= MAX_FIELD) value.push(pending.subarray(0, keep));
        }
        pending = pending.subarray(keep);
        return false;
      }
      if (state === "value") {
        value.push(pending.subarray(0, at));
        valueSize += at;
        if (valueSize <= MAX_FIELD) fields.set(name, Buffer.concat(value).toString("utf8"));
      }
      pending = pending.subarray(at + delimiter.length);
      state = "headers";
      return true;
    }
    if (state === "headers") {
      if (pending.length >= 2 && pending[0] === 0x2d && pending[1] === 0x2d) {
        state = "done";
        return false;
      }
      const end = pending.indexOf(CRLF2);
      if (end < 0) {
        if (pending.length > 16 * 1024) throw badRequest("A multipart part has oversized headers");
        return false;
      }
      const headers = pending.subarray(0, end).toString("utf8");
      pending = pending.subarray(end + CRLF2.length);
      const disposition = /content-disposition:[^\r\n]*/i.exec(headers)?.[0] ?? "";
      name = /\bname="([^"]*)"/i.exec(disposition)?.[1] ?? "";
      const isFile = /\bfilename\*?=/i.test(disposition);
      if (isFile) files++;
      state = isFile ? "skip" : "value";
      value = [];
      valueSize = 0;
      return true;
    }
    return false;
  };

  return {
    push(chunk: Uint8Array) {
      pending = pending.length ? Buffer.concat([pending, chunk]) : Buffer.from(chunk);
      while (step());
    },
    fields,
    files: () => files,
  };
}

/**
 * Writes a multipart request body to a temporary file while reading its text fields
 * (so the model can route the call), refusing it with 413 as soon as it passes
 * `limit`. The upstream then gets the file streamed from disk: a large upload is
 * never held in memory, and a refused connection can be retried from the copy.
 */
export async function spoolMultipart(request: Request, limit: number, dir: string): Promise<SpooledForm> {
  const contentType = request.headers.get("content-type") ?? "";
  const scanner = createFieldScanner(boundaryOf(contentType));
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `upload-${randomBase62(16)}`);
  const remove = () => rmSync(path, { force: true });
  const writer = Bun.file(path).writer();
  let size = 0;
  try {
    if (request.body) {
      for await (const chunk of request.body) {
        size += chunk.byteLength;
        if (size > limit) throw tooLarge(limit);
        writer.write(chunk);
        scanner.push(chunk);
      }
    }
    await writer.end();
  } catch (error) {
    await Promise.resolve(writer.end()).catch(() => {});
    remove();
    throw error;
  }
  return { path, size, contentType, fields: scanner.fields, files: scanner.files(), remove };
}
