import { api } from "../lib/api.ts";
import { formatTime } from "../lib/format.ts";
import type { NoticeFeed } from "../lib/types.ts";
import { Empty, ErrorNote, Loading } from "../ui/feedback.tsx";
import { useLoad } from "../ui/use-load.ts";

/** Unexpired notices addressed to this account: system-wide and from its ancestors. */
export function NewsPanel() {
  const news = useLoad(async () => (await api.get<NoticeFeed>("/dashboard/news")).data.data, []);
  if (!news.data) return news.error ? <ErrorNote error={news.error} /> : <Loading />;
  if (news.data.length === 0) return <Empty>No notices for you right now.</Empty>;
  return (
    <div>
      {news.data.map((n) => (
        <article class="notice-item" key={n.id}>
          <h3>{n.title}</h3>
          <p>{n.content}</p>
          <p class="hint">
            {n.target_id === null ? "To everyone" : "To your group"} · {formatTime(n.created_at)} · until {formatTime(n.expires_at)}
          </p>
        </article>
      ))}
    </div>
  );
}
