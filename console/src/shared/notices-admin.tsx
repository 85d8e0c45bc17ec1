import { useState } from "preact/hooks";
import { api, pagination, query } from "../lib/api.ts";
import { formatTime } from "../lib/format.ts";
import { NOTICE_CONTENT_MAX, NOTICE_TITLE_MAX, type Notice } from "../lib/types.ts";
import { ConfirmDialog } from "../ui/confirm.tsx";
import { ErrorNote, Loading, serverFieldError, Success } from "../ui/feedback.tsx";
import { TextArea, TextField } from "../ui/field.tsx";
import { DataTable, Pager } from "../ui/table.tsx";
import { useAction, useLoad } from "../ui/use-load.ts";

const chars = (text: string) => [...text.trim()].length;

/**
 * Publish, list and delete notices (POST/GET/DELETE /x-news). Owners may leave the
 * target empty for a system-wide notice; managers address an account of their subtree.
 */
export function NoticesAdmin({ systemWide }: { systemWide: boolean }) {
  const [title, setTitle] = useState("");
  const [content, setContent] = useState("");
  const [target, setTarget] = useState("");
  const [days, setDays] = useState("30");
  const [page, setPage] = useState(1);
  const [deleting, setDeleting] = useState<Notice | null>(null);
  const create = useAction();
  const remove = useAction();
  const list = useLoad(async () => {
    const { data, headers } = await api.get<Notice[]>(`/x-news${query({ page, size: 20 })}`);
    return { rows: data, ...pagination(headers) };
  }, [page]);
  const errors = {
    title: chars(title) > NOTICE_TITLE_MAX ? `At most ${NOTICE_TITLE_MAX} characters` : undefined,
    content: chars(content) > NOTICE_CONTENT_MAX ? `At most ${NOTICE_CONTENT_MAX} characters` : undefined,
    days: !/^\d+$/.test(days) || Number(days) < 1 || Number(days) > 365 ? "1 to 365 days" : undefined,
    target: !systemWide && !target.trim() ? "Name the account (ID, name or email)" : undefined,
  };
  const ready = chars(title) > 0 && chars(content) > 0 && !Object.values(errors).some(Boolean);
  const submit = (event: Event) => {
    event.preventDefault();
    void create.run(async () => {
      const body: Record<string, unknown> = { title: title.trim(), content: content.trim(), days: Number(days) };
      if (target.trim()) body.target = target.trim();
      await api.post("/x-news", body);
      setTitle("");
      setContent("");
      await list.reload();
      return target.trim() ? `Notice published to ${target.trim()} and the accounts below it.` : "Notice published to every account.";
    });
  };
  const confirmDelete = () => {
    const notice = deleting!;
    setDeleting(null);
    void remove.run(async () => {
      await api.del(`/x-news/${notice.id}`);
      await list.reload();
      return `Notice "${notice.title}" deleted.`;
    });
  };
  return (
    <div>
      <form class="card" onSubmit={submit} aria-labelledby="nn-h" noValidate>
        <h3 id="nn-h">New notice</h3>
        <TextField label="Title" required value={title} onInput={setTitle} hint={`${chars(title)}/${NOTICE_TITLE_MAX}`} error={errors.title ?? serverFieldError(create.error, "title")} />
        <TextArea label="Content" required value={content} onInput={setContent} hint={`${chars(content)}/${NOTICE_CONTENT_MAX}`} error={errors.content ?? serverFieldError(create.error, "content")} />
        <div class="grid">
          <TextField
            label={systemWide ? "Target account (optional)" : "Target account"}
            required={!systemWide}
            value={target}
            onInput={setTarget}
            hint={systemWide ? "Empty: every account. Otherwise an ID, name or email; it reaches that account and everyone below it." : "An ID, name or email in your subtree (or yourself for all of it)"}
            error={(title || content ? errors.target : undefined) ?? serverFieldError(create.error, "target")}
          />
          <TextField label="Visible for (days)" inputMode="numeric" value={days} onInput={setDays} error={errors.days ?? serverFieldError(create.error, "days")} />
        </div>
        <ErrorNote error={create.error} attached={["title", "content", "target", "days"]} />
        {create.done && <Success>{create.done}</Success>}
        <button type="submit" class="primary" disabled={!ready || create.busy}>
          Publish notice
        </button>
      </form>
      <h3>Published notices</h3>
      <ErrorNote error={list.error ?? remove.error} />
      {remove.done && <Success>{remove.done}</Success>}
      {list.loading && !list.data && <Loading />}
      {list.data && (
        <>
          <DataTable
            caption="Published notices"
            rows={list.data.rows}
            rowKey={(n) => n.id}
            empty="No notices published yet."
            columns={[
              { label: "Title", render: (n) => <strong>{n.title}</strong> },
              { label: "Content", render: (n) => n.content },
              { label: "To", render: (n) => (n.target_id === null ? "Everyone" : `Account ${n.target_id} and below`) },
              { label: "Published", render: (n) => formatTime(n.created_at) },
              { label: "Expires", render: (n) => `${formatTime(n.expires_at)}${Date.parse(n.expires_at) < Date.now() ? " (expired)" : ""}` },
              { label: "Actions", render: (n) => <button type="button" class="danger" aria-label={`Delete notice ${n.title}`} onClick={() => setDeleting(n)}>Delete</button> },
            ]}
          />
          <Pager label="Notices" page={page} pages={list.data.pages} total={list.data.total} onPage={setPage} />
        </>
      )}
      <ConfirmDialog open={deleting !== null} title="Delete this notice?" confirmLabel="Delete notice" danger onConfirm={confirmDelete} onCancel={() => setDeleting(null)}>
        <p>"{deleting?.title}" disappears for every reader at once.</p>
      </ConfirmDialog>
    </div>
  );
}
