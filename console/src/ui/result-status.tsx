import { useEffect, useRef, useState } from "preact/hooks";

/**
 * Says, once the answer is in, what a search or a filter found (WCAG 4.1.3: a screen
 * reader hears what pressing Apply did). `query` changes with each search the user
 * makes; refreshes that are not searches (the live tail) leave it alone and say nothing.
 * Without `loading` the results are at hand (filtered in the page) and said at once.
 */
export function ResultStatus(props: { query: string; loading?: boolean; text: string }) {
  const [said, setSaid] = useState("");
  // The search's answer is the first one after its loading started.
  const stage = useRef<"idle" | "asked" | "loading">("idle");
  const last = useRef(props.query);
  useEffect(() => {
    if (props.query === last.current) return;
    last.current = props.query;
    if (props.loading === undefined) setSaid(props.text);
    else stage.current = "asked";
  }, [props.query]);
  useEffect(() => {
    if (stage.current === "asked" && props.loading) stage.current = "loading";
    else if (stage.current === "loading" && !props.loading) {
      stage.current = "idle";
      setSaid(props.text);
    }
  }, [props.loading, props.query]);
  return (
    <p class="sr-only" role="status">
      {said}
    </p>
  );
}
