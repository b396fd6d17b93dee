import type { DemoSet } from './demo.js';

/** The lines a person reads about a demo set's first workspace: its keys, the owner's token, a first request. */
export function demoSummary(demo: DemoSet): string[] {
  const [ws] = demo.workspaces;
  const owner = demo.users.find((u) => u.role === 'owner')!;
  const lines = [
    `Demo workspace "${ws.slug}" (${ws.id})`,
    `  API key:      ${ws.apiKey}`,
    `  test API key: ${ws.testApiKey}`,
    `  owner token:  ${owner.token}   (${owner.email})`,
  ];
  if (demo.sample) {
    const { products, order, webhookEndpoint } = demo.sample;
    lines.push(`  sample data:  ${products.length} products; order ${order.id}; webhook endpoint ${webhookEndpoint.id} (paused, secret ${webhookEndpoint.secret})`);
  }
  return lines;
}

export function tryLine(demo: DemoSet, baseUrl: string): string {
  return `Try: curl -H "Authorization: Bearer ${demo.workspaces[0].apiKey}" ${baseUrl}/v1/products`;
}

/** `svc demo` without --json: every workspace and user of the set, then a first request. */
export function demoText(demo: DemoSet, baseUrl: string): string {
  const lines = [`Demo organization "${demo.organization.name}" (${demo.organization.id})`, ...demoSummary(demo)];
  for (const ws of demo.workspaces.slice(1)) {
    lines.push(`Workspace "${ws.slug}" (${ws.id})`, `  API key:      ${ws.apiKey}`, `  test API key: ${ws.testApiKey}`);
  }
  lines.push('Users (personal access tokens):');
  const width = Math.max(...demo.users.map((u) => u.email.length));
  for (const user of demo.users) lines.push(`  ${user.role.padEnd(8)}  ${user.email.padEnd(width)}  ${user.token}`);
  lines.push(`Other organization "${demo.outsiderOrganization.slug}" (${demo.outsiderOrganization.id}), for the outsider`, '', tryLine(demo, baseUrl));
  return lines.join('\n') + '\n';
}
