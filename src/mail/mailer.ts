import type { Transporter } from "nodemailer";
import type { ConfigService } from "../admin/config/service.ts";

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface MailResult {
  /** The SMTP server's final answer, e.g. `250 2.0.0 OK queued`. */
  response: string;
  messageId: string;
}

/** Sends mail through the SMTP server of the configuration items (spec 2.4). */
export interface Mailer {
  /** Whether EMAIL_SMTP and XAI_MAIL are set. */
  configured(): boolean;
  send(mail: Mail): Promise<MailResult>;
}

/**
 * A nodemailer transport built from EMAIL_SMTP, EMAIL_PORT (default 587; 465 means
 * TLS from the start, other ports upgrade with STARTTLS when offered), EMAIL_AUTH and
 * EMAIL_PASS, sending as XAI_MAIL. It is rebuilt when those items change.
 */
export function createMailer(settings: ConfigService): Mailer {
  let transport: Transporter | undefined;
  let signature = "";
  // nodemailer is loaded on the first mail: most processes never send one, and it weighs a few MB.
  const current = async () => {
    const nodemailer = (await import("nodemailer")).default;
    const host = settings.raw("EMAIL_SMTP");
    const port = Number(settings.raw("EMAIL_PORT") ?? 587);
    const user = settings.raw("EMAIL_AUTH");
    const pass = settings.raw("EMAIL_PASS");
    const next = JSON.stringify([host, port, user, pass]);
    if (!transport || next !== signature) {
      transport?.close();
      signature = next;
      transport = nodemailer.createTransport({
        host,
        port,
        secure: port === 465,
        auth: user ? { user, pass: pass ?? "" } : undefined,
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: 20_000,
      });
    }
    return transport;
  };
  return {
    configured: () => Boolean(settings.raw("EMAIL_SMTP") && settings.raw("XAI_MAIL")),
    async send(mail) {
      const from = settings.raw("XAI_MAIL");
      if (!settings.raw("EMAIL_SMTP") || !from) throw new Error("mail is not configured (EMAIL_SMTP and XAI_MAIL are required)");
      const info = (await (await current()).sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text })) as { response: string; messageId: string };
      return { response: info.response, messageId: info.messageId };
    },
  };
}
