import type { ComponentChildren } from "preact";
import { render } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { api, ApiError, LOGGED_OUT_EVENT } from "../lib/api.ts";
import { allowedPages, landingPage, PAGES, WHY_NOT, type PageId } from "../lib/pages.ts";
import { clearKey, storedKey } from "../lib/session.ts";
import { setDisplayTimeZone } from "../lib/format.ts";
import { applyTheme, nextTheme, storedTheme, themeLabel, type Theme } from "../lib/theme.ts";
import type { AccountStatus } from "../lib/types.ts";
import { ErrorNote, Loading } from "../ui/feedback.tsx";
import { keepFocusWhenDisabled } from "../ui/keep-focus.ts";
import { StatusContext } from "./context.ts";
import { Login } from "./login.tsx";

export interface Tab {
  id: string;
  label: string;
  render: () => ComponentChildren;
}

const currentTab = (tabs: Tab[]) => tabs.find((t) => `#${t.id}` === location.hash)?.id ?? tabs[0]!.id;

/** The bar on every signed-in page: the pages this key may use, the account, the theme and Log out. */
function TopBar({ page, status, onLogout }: { page: PageId; status: AccountStatus; onLogout: () => void }) {
  const [theme, setTheme] = useState<Theme>(storedTheme);
  const cycle = () => {
    const next = nextTheme(theme);
    applyTheme(next);
    setTheme(next);
  };
  return (
    <header class="top">
      <a class="brand" href={PAGES[landingPage(status)].path}>
        Router
      </a>
      <nav aria-label="Console pages">
        <ul>
          {allowedPages(status).map((id) => (
            <li key={id}>
              <a href={PAGES[id].path} aria-current={id === page ? "page" : undefined}>
                {PAGES[id].label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <div class="who">
        <span title={status.email}>
          {status.alias || status.name}
          {status.isOwner ? " (owner)" : ""}
        </span>
        <button type="button" onClick={cycle} title="Auto follows your system's light or dark setting">
          {themeLabel(theme)}
        </button>
        <button type="button" onClick={onLogout}>
          Log out
        </button>
      </div>
    </header>
  );
}

/** Header with the pages this key may use, the account and the logout button; sections as in-page tabs. */
function Frame(props: { page: PageId; title: string; status: AccountStatus; tabs: Tab[]; onLogout: () => void }) {
  const [tab, setTab] = useState(() => currentTab(props.tabs));
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    // Other fragments (the skip link's #main) leave the section as it is.
    const follow = () => {
      if (!props.tabs.some((t) => `#${t.id}` === location.hash)) return;
      setTab(currentTab(props.tabs));
      heading.current?.focus();
    };
    addEventListener("hashchange", follow);
    // A hash that changed after the first render but before this listener existed (a
    // link followed while the page was still mounting) is still followed, without focus.
    if (props.tabs.some((t) => `#${t.id}` === location.hash)) setTab(currentTab(props.tabs));
    return () => removeEventListener("hashchange", follow);
  }, [props.tabs]);
  const active = props.tabs.find((t) => t.id === tab) ?? props.tabs[0]!;
  // The window's title names the section too: it is what a screen reader says first, and
  // what tells apart two tabs of the same page.
  useEffect(() => {
    document.title = `${active.label} · ${props.title} · Router console`;
  }, [active.label, props.title]);
  const { status } = props;
  return (
    <>
      <TopBar page={props.page} status={status} onLogout={props.onLogout} />
      <nav class="tabs" aria-label={`${props.title} sections`}>
        <ul>
          {props.tabs.map((t) => (
            <li key={t.id}>
              <a href={`#${t.id}`} aria-current={t.id === active.id ? "true" : undefined}>
                {t.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main">
        <h1 class="sr-only">{props.title}</h1>
        <h2 ref={heading} tabIndex={-1} class="section-title">
          {active.label}
        </h2>
        <div key={active.id}>{active.render()}</div>
      </main>
    </>
  );
}

function NotAllowed({ page, status, onLogout }: { page: PageId; status: AccountStatus; onLogout: () => void }) {
  return (
    <>
    <TopBar page={page} status={status} onLogout={onLogout} />
    <main id="main" class="login">
      <div class="card">
        <h1>Not available for this key</h1>
        <div class="note error" role="alert">
          <strong>403:</strong> {WHY_NOT[page]}
        </div>
        <p>Pages you can use:</p>
        <ul>
          {allowedPages(status).map((id) => (
            <li key={id}>
              <a href={PAGES[id].path}>{PAGES[id].label}</a>
            </li>
          ))}
        </ul>
      </div>
    </main>
    </>
  );
}

/** Login state machine of every page: no key → login; key → status → page (or why not). */
function Console(props: { page: PageId; title: string; tabs: Tab[] }) {
  const [status, setStatus] = useState<AccountStatus | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loggedOut, setLoggedOut] = useState<string | null>(null);
  const [hasKey, setHasKey] = useState(() => storedKey() !== null);

  const refreshStatus = useCallback(async () => {
    try {
      setStatus((await api.get<AccountStatus>("/dashboard/status")).data);
      setError(null);
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 401)) setError(e);
    }
  }, []);

  useEffect(() => {
    const onLoggedOut = (event: Event) => {
      setHasKey(false);
      setStatus(null);
      setLoggedOut(`The router refused the key (401: ${(event as CustomEvent<string>).detail}). Sign in again.`);
    };
    addEventListener(LOGGED_OUT_EVENT, onLoggedOut);
    if (hasKey) void refreshStatus();
    return () => removeEventListener(LOGGED_OUT_EVENT, onLoggedOut);
  }, []);

  const logout = () => {
    clearKey();
    setHasKey(false);
    setStatus(null);
    setLoggedOut("Logged out. The key was removed from this tab.");
  };

  if (!hasKey) {
    document.title = "Sign in · Router console";
    return (
      <Login
        reason={loggedOut}
        onLogin={(next) => {
          const target = landingPage(next);
          if (target !== props.page) return location.assign(PAGES[target].path);
          setLoggedOut(null);
          setStatus(next);
          setHasKey(true);
        }}
      />
    );
  }
  if (!status) {
    return (
      <main id="main" class="login">
        {error ? <ErrorNote error={error} /> : <Loading what="Checking the key" />}
        {error && (
          <button type="button" onClick={() => void refreshStatus()}>
            Try again
          </button>
        )}
      </main>
    );
  }
  // Before the pages render: every time they show is in the router's business zone.
  setDisplayTimeZone(status.timeZone);
  if (!allowedPages(status).includes(props.page)) {
    document.title = `Not available · ${props.title} · Router console`;
    return <NotAllowed page={props.page} status={status} onLogout={logout} />;
  }
  return (
    <StatusContext.Provider value={{ status, refreshStatus }}>
      <Frame page={props.page} title={props.title} status={status} tabs={props.tabs} onLogout={logout} />
    </StatusContext.Provider>
  );
}

export function mountConsole(page: PageId, title: string, tabs: Tab[]): void {
  // Inside another site's frame (clickjacking) the console shows nothing to click: its
  // pages are Bun's HTML bundles, served without headers of the router's own, and a
  // <meta> Content-Security-Policy cannot say frame-ancestors.
  if (window.top !== window.self) {
    document.getElementById("app")!.textContent = "The router console cannot be used inside a frame: open it in its own window.";
    return;
  }
  document.title = `${title} · Router console`;
  applyTheme(storedTheme());
  keepFocusWhenDisabled();
  render(<Console page={page} title={title} tabs={tabs} />, document.getElementById("app")!);
}
