import { HttpError } from "../core/errors.ts";

export const streamTimeout = (seconds: number) =>
  new HttpError("timeout", `The upstream sent nothing for ${seconds} s; the stream was ended`, { code: "upstream_idle_timeout" });

export const streamBroken = () =>
  new HttpError("upstream", "The upstream connection failed during the stream", { code: "upstream_stream_error" });
