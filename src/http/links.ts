/** `docs/receiving-webhooks.md` and `/dashboard/` in a description, not already inside a link. */
const MENTIONS = /(?<![[(/\w])(docs\/([a-z0-9-]+\.md)|\/dashboard\/)(?![\]\w])/g;

/**
 * Turns the guides and pages that descriptions mention into links: `docs/x.md` to the guide the
 * service serves at /docs/guides/x.md, `/dashboard/` to the dashboard. The links are relative to
 * the service (the document's own address), so the document, and the SDK's types generated from
 * it, do not depend on where it was built.
 */
export function linkMentions(text: string): string {
  return text.replace(MENTIONS, (mention: string, _all: string, guide: string | undefined) =>
    guide ? `[${mention}](/docs/guides/${guide})` : `[${mention}](${mention})`,
  );
}

/** Applies linkMentions to every `description` of the document, however deep. */
export function linkDescriptions(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) linkDescriptions(item);
  } else if (node !== null && typeof node === 'object') {
    const object = node as Record<string, unknown>;
    for (const [key, value] of Object.entries(object)) {
      if (key === 'description' && typeof value === 'string') object[key] = linkMentions(value);
      else linkDescriptions(value);
    }
  }
}
