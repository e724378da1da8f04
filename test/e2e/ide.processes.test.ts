import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

/**
 * The GraphiQL page served at GET /graphql, driven in headless Chromium with every request off
 * the gateway's own origin blocked: it must load and run a query with no internet access.
 * Chromium comes from Debian's package (.ci/run installs it).
 */
const CHROMIUM = '/usr/bin/chromium';

describe.each(storeKinds.slice(0, 1))('the GraphQL IDE, offline ($name store)', (kind) => {
  let gw: TestGateway;
  let dispose: () => Promise<void>;
  let context: BrowserContext;
  let userDataDir: string;
  let key: string;
  const foreign: string[] = [];

  beforeAll(async () => {
    const opened = await kind.open();
    dispose = opened.dispose;
    gw = await startTestGateway(await embeddedWithUsers(opened.store));
    const created = await gw.gql<{ createApiKey: { key: string } }>(
      'mutation { createApiKey(input: { name: "ide" }) { key } }',
      {},
      { authorization: basicAuthorization('alice', 'alice-password') },
    );
    key = created.body.data!.createApiKey.key;
    userDataDir = mkdtempSync(path.join(tmpdir(), 'recs-gateway-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
    const origin = new URL(gw.url).origin;
    await context.route('**/*', async (route) => {
      const url = route.request().url();
      if (url.startsWith(`${origin}/`)) return route.continue();
      foreign.push(url);
      return route.abort('blockedbyclient');
    });
  });
  afterAll(async () => {
    await context?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
    await gw?.stop().catch(() => undefined);
    await dispose?.();
  });

  it('runs its default query, then another, with an API key header, fetching nothing from elsewhere', async () => {
    const page = context.pages()[0] ?? (await context.newPage());
    const fetched: string[] = [];
    page.on('request', (request) => fetched.push(new URL(request.url()).pathname));
    const complaints: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') complaints.push(message.text());
    });
    const response = await page.goto(`${gw.url}/graphql`);
    expect(response?.status()).toBe(200);
    await page.locator('.graphiql-execute-button').waitFor({ timeout: 20_000 });

    await page.getByRole('button', { name: /^headers$/i }).click();
    const headerEditor = page.locator('.graphiql-editor-tool .monaco-editor').last();
    await headerEditor.waitFor();
    await headerEditor.click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText(JSON.stringify({ Authorization: key }));

    // the query the IDE opens with, as it is
    await page.locator('.graphiql-execute-button').click();
    const result = page.locator('.result-window');
    const resultText = async () => (await result.innerText()).replace(/\u00a0/g, ' ');
    await expect.poll(resultText, { timeout: 20_000 }).toContain('"productRecommendations"');
    expect(await resultText()).toContain('"authenticatedBy": "API_KEY"');

    // the query editor (Monaco): replace its text without typing (typing would auto-close brackets)
    const queryEditor = page.locator('.graphiql-query-editor .monaco-editor').first();
    await queryEditor.waitFor();
    await queryEditor.click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText('query Ide { viewer { username authenticatedBy } }');

    // GraphiQL learns the new operation's name from the editor a moment after the edit; run before
    // that, it asks for the old one ("Cannot infer operation Recommendations"): run it again then
    await page.locator('.graphiql-execute-button').click();
    const settled = async () => {
      const text = await resultText();
      if (text.includes('Cannot infer operation')) await page.locator('.graphiql-execute-button').click();
      return text;
    };
    await expect.poll(settled, { timeout: 20_000 }).toContain('"username": "alice"');
    expect(await resultText()).not.toContain('"productRecommendations"');
    expect(foreign).toEqual([]);
    // the editor, its stylesheet and Monaco's workers came from the gateway's hashed files, and the
    // workers ran as workers (Monaco says so on the console when it falls back to the main thread)
    const files = new Set(fetched.filter((path) => path.startsWith('/graphql/ide/')));
    expect([...files].filter((path) => path.endsWith('.css'))).toHaveLength(1);
    expect([...files].filter((path) => path.endsWith('.js')).length).toBeGreaterThanOrEqual(3);
    expect(complaints.filter((text) => /worker/i.test(text))).toEqual([]);
  });

  it('learns the schema, and runs its default query without a key to a clear 401 in its result pane, not a browser password box', async () => {
    // a first visit: what the test before saved in the page's storage (its key, its query) cleared
    // alone: a page of the test before, open beside it, saves its state over what is cleared here
    const page = await context.newPage();
    for (const other of context.pages()) if (other !== page) await other.close();
    const answers: { introspection: boolean; status: number; challenge: string | undefined }[] = [];
    page.on('response', (response) => {
      const request = response.request();
      if (request.method() !== 'POST' || new URL(request.url()).pathname !== '/graphql') return;
      answers.push({ introspection: (request.postData() ?? '').includes('__schema'), status: response.status(), challenge: response.headers()['www-authenticate'] });
    });
    // cleared from a page of the origin that runs no GraphiQL (its unload would save them again)
    await page.goto(`${gw.url}/healthz`);
    await page.evaluate('localStorage.clear()');
    await page.goto(`${gw.url}/graphql`);
    await page.locator('.graphiql-execute-button').waitFor({ timeout: 20_000 });
    // GraphiQL introspects on load (the docs, the completions): refused over MAX_DEPTH until the
    // introspection fields' selections counted apart
    await expect.poll(() => answers.filter((answer) => answer.introspection).length, { timeout: 20_000 }).toBeGreaterThan(0);
    expect(answers.filter((answer) => answer.introspection).map((answer) => answer.status)).not.toContain(400);

    // the button shows before the editor holds the default query (run then, it sends nothing)
    const editorText = async () => (await page.locator('.graphiql-query-editor .view-lines').first().innerText()).replace(/\u00a0/g, ' ');
    await expect.poll(editorText, { timeout: 20_000 }).toContain('productRecommendations');
    await page.locator('.graphiql-execute-button').click();
    const result = page.locator('.result-window');
    // a Basic challenge made Chromium ask for a password in a box of its own, and the query hung
    await expect.poll(async () => (await result.innerText()).replace(/\u00a0/g, ' '), { timeout: 20_000 }).toContain('"UNAUTHENTICATED"');
    const refused = answers.filter((answer) => !answer.introspection);
    expect(refused.map((answer) => [answer.status, answer.challenge])).toContainEqual([401, 'Bearer realm="recs-gateway"']);
    await page.close();
  });
});
