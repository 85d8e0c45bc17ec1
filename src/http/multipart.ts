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
  /**
   * Names of text fields the router cannot read unambiguously: given more than once
   * (the upstream may take another occurrence than the router) or longer than 64 KiB.
   */
  unclear: Set<string>;
  /** Number of file parts. */
  files: number;
  remove(): void;
}

const MAX_FIELD = 64 * 1024;
const CRLF2 = Buffer.from("\r\n\r\n");

/**
 * A header value split into its type and parameters (`form-data; name="a"; filename="b"`),
 * names lower-cased, quotes honoured (a `name=` inside a quoted value is not a
 * parameter). Quoted values are read as browsers write them (a `"` inside is sent as
 * `%22`, a backslash as itself), so a backslash is literal. Two shapes are refused as
 * ambiguous, since the router and the upstream might then read different fields: a
 * parameter given twice, and a quoted value ending in a backslash (a parser that
 * unescapes would not end the value there).
 */
export function headerParams(value: string): { type: string; params: Map<string, string> } {
  const params = new Map<string, string>();
  let at = value.indexOf(";");
  const type = (at < 0 ? value : value.slice(0, at)).trim().toLowerCase();
  if (at < 0) return { type, params };
  const n = value.length;
  while (at < n) {
    while (at < n && (value[at] === ";" || value[at] === " " || value[at] === "\t")) at++;
    if (at >= n) break;
    let end = at;
    while (end < n && value[end] !== "=" && value[end] !== ";") end++;
    const name = value.slice(at, end).trim().toLowerCase();
    at = end;
    let param = "";
    if (value[at] === "=") {
      at++;
      while (at < n && (value[at] === " " || value[at] === "\t")) at++;
      if (value[at] === '"') {
        at++;
        end = value.indexOf('"', at);
        if (end < 0) end = n;
        param = value.slice(at, end);
        at = end + 1;
        if (param.endsWith("\\")) throw badRequest(`The header parameter "${name}" ends in a backslash, which parsers read differently`);
      } else {
        end = at;
        while (end < n && value[end] !== ";") end++;
        param = value.slice(at, end).trim();
        at = end;
      }
    }
    if (!name) continue;
    if (params.has(name)) throw badRequest(`The header parameter "${name}" is given twice`);
    params.set(name, param);
  }
  return { type, params };
}

function boundaryOf(contentType: string): string {
  const { type, params } = headerParams(contentType);
  const boundary = params.get("boundary");
  // RFC 2046: 1 to 70 characters.
  if (type !== "multipart/form-data" || !boundary || boundary.length > 70) {
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
  const unclear = new Set<string>();
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
        if (valueSize > MAX_FIELD || fields.has(name)) {
          unclear.add(name);
          fields.delete(name);
        } else if (!unclear.has(name)) fields.set(name, Buffer.concat(value).toString("utf8"));
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
      const disposition = headerParams(/^content-disposition:([^\r\n]*)/im.exec(headers)?.[1] ?? "").params;
      name = disposition.get("name") ?? "";
      const isFile = disposition.has("filename") || disposition.has("filename*");
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
    unclear,
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
  return { path, size, contentType, fields: scanner.fields, unclear: scanner.unclear, files: scanner.files(), remove };
}
