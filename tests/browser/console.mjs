// The console in a real browser (Debian's chromium driven by playwright-core from web/):
// the admin signs in and builds a domain, users and profiles; users sign in (password and
// presigned URL), run jobs through the API, watch metrics and logs, stop a job; a read-only
// user is refused a button with AWS's AccessDenied; another user cannot see the jobs.
// Run by run_browser.py, which starts the server and passes:
//   TY_URL, TY_ADMIN_PASSWORD, TY_ACCOUNT, TY_API (argv prefix of api.py, JSON), TY_SHOTS,
//   TY_CHROMIUM, TY_PREFIX (unique name prefix)
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import path from "node:path";
import assert from "node:assert/strict";

const require = createRequire(import.meta.url);
const { chromium } = require(path.resolve(process.env.TY_WEB, "node_modules/playwright-core"));

const URL0 = process.env.TY_URL;
const ACCOUNT = process.env.TY_ACCOUNT || "000000000000";
const API = JSON.parse(process.env.TY_API);
const SHOTS = process.env.TY_SHOTS;
const P = process.env.TY_PREFIX || "con";
const t0 = Date.now();

function log(msg) {
  console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);
}

function api(akid, secret, ...args) {
  const out = execFileSync(API[0], [...API.slice(1), URL0, akid, secret, ...args.map(String)],
    { encoding: "utf8", timeout: 180000 });
  return JSON.parse(out.trim().split("\n").pop());
}

async function shot(page, name) {
  if (!SHOTS) return;
  await page.screenshot({ path: path.join(SHOTS, name + ".png"), fullPage: true });
}

async function signin(browser, user, password) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await ctx.newPage();
  page.on("dialog", (d) => d.accept());
  await page.goto(URL0 + "/console/login");
  await page.getByLabel("Account ID").fill(ACCOUNT);
  await page.getByLabel("IAM user name").fill(user);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL("**/console/home");
  return page;
}

async function banner(page) {
  return (await page.locator(".alert").first().textContent()).trim();
}

// submits the form whose legend is legend, with fields {label: value}
async function form(page, legend, fields, button) {
  const f = page.locator("form", { has: page.locator("legend", { hasText: legend }) });
  for (const [label, value] of Object.entries(fields))
    await f.getByLabel(label, { exact: true }).fill(value);
  await f.getByRole("button", { name: button }).click();
  await page.waitForLoadState();
}

async function until(what, fn, timeoutMs = 60000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

const browser = await chromium.launch({ executablePath: process.env.TY_CHROMIUM, headless: true });
try {
  // --- the admin signs in (password from --admin-password-file) ---
  {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const p = await ctx.newPage();
    await p.goto(URL0 + "/console/login");
    await shot(p, "login");
    // a wrong password: one message for every mistake, no session
    await p.getByLabel("IAM user name").fill("admin");
    await p.getByLabel("Password").fill("not-the-password");
    await p.getByRole("button", { name: "Sign in" }).click();
    assert.match(await banner(p), /authentication information is incorrect/);
    await ctx.close();
  }
  const admin = await signin(browser, "admin", process.env.TY_ADMIN_PASSWORD);
  const cookies = await admin.context().cookies();
  const c = cookies.find((x) => x.name === "ty_console");
  assert.ok(c && c.httpOnly && c.sameSite === "Strict", JSON.stringify(cookies));
  await shot(admin, "home");
  log("admin signed in");

  // --- a domain ---
  const dom = `${P}-dom`;
  await admin.getByRole("link", { name: "Domains", exact: true }).click();
  await form(admin, "Create a domain", { "Domain name": dom }, "Create domain");
  assert.equal(await banner(admin), "CreateDomain succeeded.");
  const domLink = admin.getByRole("link", { name: dom, exact: true });
  await domLink.click();
  const domUrl = admin.url();
  const domId = domUrl.split("/").pop();
  await until("domain InService", async () => {
    await admin.goto(domUrl);
    return (await admin.locator("dl.facts").textContent()).includes("InService");
  });
  log(`domain ${domId}`);

  // --- IAM users: a trainer (full rights) and a viewer (read only) ---
  async function makeUser(name, password, policy) {
    await admin.goto(URL0 + "/console/iam/users");
    await form(admin, "Create an IAM user", { "User name": name }, "Create user");
    assert.equal(await banner(admin), "CreateUser succeeded.");
    await admin.getByRole("link", { name, exact: true }).click();
    await form(admin, "Give a console password", { Password: "short" }, "Create login profile");
    assert.match(await banner(admin), /Password should have a minimum length of 8/);
    await form(admin, "Give a console password", { Password: password }, "Create login profile");
    assert.equal(await banner(admin), "CreateLoginProfile succeeded.");
    await form(admin, "Put an inline policy",
      { "Policy name": "console-test", "Policy document (JSON)": JSON.stringify(policy) },
      "Put policy");
    assert.equal(await banner(admin), "PutUserPolicy succeeded.");
    await admin.getByRole("button", { name: "Create access key" }).click();
    await admin.waitForLoadState();
    const secret = (await admin.locator("#new-secret").textContent()).trim();
    const akid = (await admin.locator(".alert code").first().textContent()).trim();
    assert.match(akid, /^AKIA/);
    return { akid, secret };
  }
  const trainer = await makeUser(`${P}-ua`, "Trainer-Passw0rd", {
    Version: "2012-10-17",
    Statement: [{ Effect: "Allow", Action: ["sagemaker:*", "logs:*", "s3:*", "iam:PassRole"],
      Resource: "*" }],
  });
  await shot(admin, "iam-user");
  const viewer = await makeUser(`${P}-ub`, "Viewer-Passw0rd", {
    Version: "2012-10-17",
    Statement: [{ Effect: "Allow",
      Action: ["sagemaker:Describe*", "sagemaker:List*", "logs:Get*", "logs:Describe*"],
      Resource: "*" }],
  });
  log("users made");

  // --- the account password policy, from the IAM users page ---
  await admin.goto(URL0 + "/console/iam/users");
  {
    const f = admin.locator("form", { has: admin.locator("legend", { hasText: "Set the account password policy" }) });
    await f.getByLabel("Minimum password length (6-128)").fill("10");
    await f.getByLabel("Allow users to change their own password").check();
    await f.getByRole("button", { name: "Set policy" }).click();
    await admin.waitForLoadState();
    assert.equal(await banner(admin), "UpdateAccountPasswordPolicy succeeded.");
    assert.match(await admin.locator("#pw-policy").textContent(), /at least 10 characters/);
  }

  // --- user profiles: one mapped to the trainer, one of nobody; the profiler app ---
  async function makeProfile(name, iamUser) {
    await admin.goto(domUrl);
    const fields = { "User profile name": name };
    if (iamUser) fields["IAM user it belongs to (optional: the jobs this user creates are attributed to this profile)"] = iamUser;
    await form(admin, "Create a user profile", fields, "Create user profile");
    assert.equal(await banner(admin), "CreateUserProfile succeeded.");
    await admin.goto(`${domUrl}/users/${name}`);
    await until("profile InService", async () => {
      await admin.goto(`${domUrl}/users/${name}`);
      return (await admin.locator("dl.facts").textContent()).includes("InService");
    });
    await form(admin, "Create an app", {}, "Create app");
    assert.equal(await banner(admin), "CreateApp succeeded.");
    await until("app InService", async () => {
      await admin.goto(`${domUrl}/users/${name}`);
      return (await admin.locator("table").last().textContent()).includes("InService");
    });
  }
  await makeProfile(`${P}-pa`, `${P}-ua`);
  await makeProfile(`${P}-pb`, null);
  await shot(admin, "user-profile");
  await admin.goto(domUrl);
  await shot(admin, "domain");
  log("profiles and apps InService");

  // --- the trainer runs two jobs through the API ---
  const jobA = `${P}-a-${Date.now() % 1000000}`;
  const jobB = `${P}-b-${Date.now() % 1000000}`;
  api(trainer.akid, trainer.secret, "create-job", jobA, "profiled");
  api(trainer.akid, trainer.secret, "create-job", jobB, "long");
  log(`jobs ${jobA} ${jobB} created`);
  await admin.goto(URL0 + "/console/system");
  assert.equal((await admin.locator("#live-agents").textContent()).trim(), "1");
  assert.ok((await admin.content()).includes("Quotas"));
  // each agent's resource ledger: what is free of its capacity (docs/resources.md)
  assert.ok((await admin.content()).includes("Ledger free (GPUs / vCPUs / GiB)"));
  // the queue in the order agents take it, and whose each job is (fair share)
  assert.ok((await admin.content()).includes("Waiting jobs, in the order agents consider them"));
  // a principal's own quota, set from the same page through IAM's TagUser
  await form(admin, "Set an IAM user's quota",
    { "IAM user": `${P}-ua`, "Training instances in progress (0: no limit)": "7" }, "Set quota");
  assert.equal(await banner(admin), "TagUser succeeded.");
  assert.ok((await admin.content()).includes(`<td>user</td><td>${P}-ua</td><td>7</td>`));
  await shot(admin, "system");

  // --- the trainer signs in with his password and watches job B live ---
  const tp = await signin(browser, `${P}-ua`, "Trainer-Passw0rd");
  await tp.getByRole("link", { name: "Training jobs", exact: true }).click();
  await until("both jobs listed", async () => {
    await tp.reload();
    const t = await tp.locator("table").textContent();
    return t.includes(jobA) && t.includes(jobB);
  });
  await tp.getByLabel("Name contains").fill(jobB);
  await tp.getByRole("button", { name: "Filter" }).click();
  await tp.waitForLoadState();
  assert.ok(!(await tp.locator("table").textContent()).includes(jobA));
  await shot(tp, "jobs");
  await tp.getByRole("link", { name: jobB, exact: true }).click();
  await until("job B's log tail follows", async () =>
    ((await tp.locator("#log").textContent()).match(/step=\d+/g) || []).length >= 3, 90000);
  await tp.locator("#charts .uplot canvas").first().waitFor({ timeout: 30000 });
  // the chart grows while the job runs
  const n1 = ((await tp.locator("#log").textContent()).match(/step=/g) || []).length;
  await until("more log lines", async () =>
    ((await tp.locator("#log").textContent()).match(/step=/g) || []).length > n1, 20000);
  log("job B followed");
  // its live system metrics: charts that grow while it runs
  const samples = async () => Number((await tp.locator("#sysmon").getAttribute("data-samples")) || 0);
  await until("job B's system metrics", async () => (await samples()) > 0, 60000);
  await tp.locator("#sys-cpu .uplot canvas").waitFor({ timeout: 10000 });
  await tp.locator("#sys-net .uplot canvas").waitFor({ timeout: 10000 });
  const s1 = await samples();
  await until("the system charts update", async () => (await samples()) > s1, 30000);
  assert.match(await tp.locator("#sys-cpu figcaption").textContent(), /CPU \(mean of cores\): [0-9]/);
  await tp.locator("#h-sys").scrollIntoViewIfNeeded();
  await shot(tp, "job-live");
  log("job B's live system charts");

  // --- the viewer is refused Stop with AWS's words, in the page ---
  const vp = await signin(browser, `${P}-ub`, "Viewer-Passw0rd");
  await vp.goto(`${URL0}/console/jobs/${jobB}`);
  await vp.getByRole("button", { name: "Stop" }).click();
  await vp.waitForLoadState();
  const denied = await banner(vp);
  assert.match(denied, /AccessDenied/);
  assert.match(denied, /is not authorized to perform: sagemaker:StopTrainingJob/);
  await shot(vp, "access-denied");
  // and the viewer's own rights show as a page too: no IAM rights
  await vp.goto(`${URL0}/console/iam/users`);
  assert.match(await banner(vp), /AccessDenied.*iam:ListUsers/);
  log("viewer refused");

  // --- the trainer stops job B from its page (with the confirmation) ---
  await tp.reload();
  await tp.getByRole("button", { name: "Stop" }).click();
  await tp.waitForLoadState();
  assert.equal(await banner(tp), "StopTrainingJob succeeded.");
  api(trainer.akid, trainer.secret, "wait-job", jobB, "Stopped", 120);
  log("job B stopped");

  // --- job A: completed, its metrics chart, log and artifacts ---
  const a = api(trainer.akid, trainer.secret, "wait-job", jobA, "Completed,Failed", 180);
  assert.equal(a.TrainingJobStatus, "Completed", a.FailureReason);
  await tp.goto(`${URL0}/console/jobs/${jobA}`);
  await tp.locator("#charts .uplot canvas").first().waitFor({ timeout: 30000 });
  await until("job A's log", async () =>
    (await tp.locator("#log").textContent()).includes("train_loss="), 30000);
  const tl = await tp.locator("ol.timeline").textContent();
  assert.ok(tl.includes("Completed") && tl.includes("Training"), tl);
  // hover shows values in the legend
  const canvas = tp.locator("#charts .uplot .u-over").first();
  const box = await canvas.boundingBox();
  await tp.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await shot(tp, "job");
  // the model's link is an S3 presigned URL: it downloads with no cookie and no keys
  const show = tp.locator('a[href*="model.tar.gz"][href*="show=1"]').first();
  await show.click();
  await tp.waitForLoadState();
  const purlA = await tp.locator("#presigned-s3").getAttribute("href");
  assert.match(purlA, /X-Amz-Signature=/);
  const dl = await fetch(purlA);
  assert.equal(dl.status, 200);
  assert.ok((await dl.arrayBuffer()).byteLength > 0);
  await shot(tp, "presigned");
  log("job A page, presigned model link");

  // --- the trainer's profile, through a presigned domain URL: the profiler app ---
  await admin.goto(`${domUrl}/users/${P}-pa`);
  await admin.getByRole("button", { name: "Create a presigned domain URL" }).click();
  await admin.waitForLoadState();
  const purl = await admin.locator("#presigned-url").getAttribute("href");
  const sctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const sp = await sctx.newPage();
  await sp.goto(purl);
  await sp.waitForURL("**/console/profiler");
  const mine = await sp.locator("table").textContent();
  assert.ok(mine.includes(jobA) && mine.includes(jobB), "jobs attributed to the profile");
  await shot(sp, "profiler");
  await sp.getByRole("link", { name: jobA, exact: true }).click();
  await sp.locator("#h-prof").waitFor();
  const prof = await sp.locator("section[aria-labelledby=h-prof]").textContent();
  assert.ok(prof.includes("timeline.trace.json"), prof);
  assert.ok(prof.includes("ui.perfetto.dev"));
  await shot(sp, "profiler-job");
  {
    const r = await sp.goto(await sp.locator('a[href*="timeline.trace.json"][href*="show=1"]').first()
      .getAttribute("href").then((h) => new URL(h, URL0).href));
    assert.equal(r.status(), 200);
    const u = await sp.locator("#presigned-s3").getAttribute("href");
    assert.match(u, /X-Amz-Security-Token=/);
    const t = await fetch(u);
    assert.equal(t.status, 200);
    JSON.parse(await t.text());
    await sp.goBack();
  }
  // the finished job's system metrics, charted in the app
  await until("job A's system charts", async () =>
    Number((await sp.locator("#sysmon").getAttribute("data-samples")) || 0) > 0, 15000);
  // the dashboard the agent made, inside the app
  await sp.getByRole("link", { name: "Open the profiler dashboard" }).click();
  await sp.waitForLoadState();
  assert.ok((await sp.content()).includes('id="sec-rules"'), "the dashboard");
  await shot(sp, "profiler-dashboard");
  log("profiler app");

  // --- another domain user cannot see the trainer's jobs ---
  await admin.goto(`${domUrl}/users/${P}-pb`);
  await admin.getByRole("button", { name: "Create a presigned domain URL" }).click();
  await admin.waitForLoadState();
  const purl2 = await admin.locator("#presigned-url").getAttribute("href");
  const octx = await browser.newContext();
  const op = await octx.newPage();
  await op.goto(purl2);
  await op.waitForURL("**/console/profiler");
  assert.ok(!(await op.content()).includes(jobA));
  const r = await op.goto(`${URL0}/console/profiler/jobs/${jobA}`);
  assert.equal(r.status(), 404);
  // nor the admin pages
  const r2 = await op.goto(`${URL0}/console/jobs/${jobA}`);
  assert.equal(r2.status(), 403);
  log("other user sees nothing");

  // --- the trainer changes his own password (iam:ChangePassword, the account policy) ---
  await tp.goto(`${URL0}/console/home`);
  await tp.getByRole("link", { name: "Change password" }).click();
  await tp.waitForURL("**/console/password");
  const pwForm = { "Current password": "Trainer-Passw0rd", "New password": "Sh0rt-pw!",
    "Confirm new password": "Sh0rt-pw!" };
  await form(tp, "Change your password", pwForm, "Change password");
  assert.match(await banner(tp), /PasswordPolicyViolation.*minimum length of 10/);
  await form(tp, "Change your password", { ...pwForm, "New password": "Trainer-Passw0rd-2",
    "Confirm new password": "Trainer-Passw0rd-3" }, "Change password");
  assert.match(await banner(tp), /do not match/);
  await form(tp, "Change your password", { ...pwForm, "New password": "Trainer-Passw0rd-2",
    "Confirm new password": "Trainer-Passw0rd-2" }, "Change password");
  assert.equal(await banner(tp), "ChangePassword succeeded.");
  await shot(tp, "password");
  log("password changed");

  // --- sign out ends the session ---
  await tp.getByRole("button", { name: "Sign out" }).click();
  await tp.waitForURL("**/console/login");
  const r3 = await tp.goto(`${URL0}/console/home`);
  assert.equal(r3.status(), 403);
  log("signed out");
  // the new password signs in, the old one no longer does
  await (await signin(browser, `${P}-ua`, "Trainer-Passw0rd-2")).context().close();
  {
    const ctx = await browser.newContext();
    const p = await ctx.newPage();
    await p.goto(URL0 + "/console/login");
    await p.getByLabel("IAM user name").fill(`${P}-ua`);
    await p.getByLabel("Password").fill("Trainer-Passw0rd");
    await p.getByRole("button", { name: "Sign in" }).click();
    assert.match(await banner(p), /authentication information is incorrect/);
    await ctx.close();
  }
  // --- a tenant's hostile objects never run as the console ---
  // The trainer may write his own bucket: he replaces job A's artifacts with active content
  // whose script, were it to run as the console, would read the admin's CSRF token and
  // attach an admin policy to himself. The admin opens each through every console link and a
  // presigned URL of any client; afterwards the trainer has no new policy.
  {
    const [rootA, rootS] = JSON.parse(process.env.TY_ROOT_KEYS);
    const before = api(rootA, rootS, "user-policies", `${P}-ua`).PolicyNames;
    const js = `window.__pwned = 1; fetch('/console/home').then(r => r.text()).then(t => {
      const m = t.match(/name="csrf" value="([0-9a-f]+)"/);
      const f = new URLSearchParams({csrf: m ? m[1] : "", svc: "iam", op: "PutUserPolicy",
        "p.UserName": "${P}-ua", "p.PolicyName": "pwned",
        "p.PolicyDocument": JSON.stringify({Version: "2012-10-17",
          Statement: [{Effect: "Allow", Action: "*", Resource: "*"}]})});
      return fetch('/console/do', {method: "POST", body: f});
    });`;
    const bucket = "con-browser";
    const modelKey = `out/${jobA}/output/model.tar.gz`;
    const outKey = `out/${jobA}/output/output.tar.gz`;
    const profKey = `prof/${jobA}/profiler-output/evil.xhtml`;
    api(trainer.akid, trainer.secret, "put-object", bucket, modelKey, "text/html",
      `<html><body><h1>model</h1><script>${js}</script></body></html>`);
    api(trainer.akid, trainer.secret, "put-object", bucket, outKey, "image/svg+xml",
      `<svg xmlns="http://www.w3.org/2000/svg"><script>${js.replace(/&/g, "&amp;").replace(/</g, "&lt;")}</script></svg>`);
    api(trainer.akid, trainer.secret, "put-object", bucket, profKey, "application/xhtml+xml",
      `<html xmlns="http://www.w3.org/1999/xhtml"><body><script>//<![CDATA[\n${js}\n//]]></script></body></html>`);
    const urls = [];
    for (const key of [modelKey, outKey, profKey]) {
      const uri = encodeURIComponent(`s3://${bucket}/${key}`);
      urls.push(`${URL0}/console/presign?uri=${uri}`);          // the link: a 303 to S3
      urls.push(`${URL0}/console/download?uri=${uri}`);         // "via the console"
      urls.push(`${URL0}/console/download?uri=${uri}&view=1`);  // the sandboxed view
      urls.push(api(trainer.akid, trainer.secret, "presign", bucket, key, "v4").url);
      urls.push(api(trainer.akid, trainer.secret, "presign", bucket, key, "v2").url);
      urls.push(`${api(trainer.akid, trainer.secret, "presign", bucket, key, "v4").url}` +
        "&response-content-type=text%2Fhtml");
    }
    // the links on job A's page too (the model's, the output's, the presigned URL's page)
    await admin.goto(`${URL0}/console/jobs/${jobA}`);
    for (const a of await admin.locator('a[href*="/console/presign"], a[href*="/console/download"]').all())
      urls.push(new URL(await a.getAttribute("href"), URL0).toString());
    let opened = 0;
    for (const u of urls) {
      const p = await admin.context().newPage();
      try {
        await p.goto(u, { timeout: 15000 });
        opened++;
      } catch (e) {
        // a download (Content-Disposition: attachment) is not a page: nothing ran
        assert.match(String(e), /Download is starting|net::ERR_ABORTED/, `${u}: ${e}`);
      }
      await p.waitForTimeout(300);
      const ran = await p.evaluate(() => window.__pwned === 1).catch(() => false);
      assert.equal(ran, false, `the hostile script ran at ${u}`);
      await p.close();
    }
    await admin.waitForTimeout(1000);
    const after = api(rootA, rootS, "user-policies", `${P}-ua`).PolicyNames;
    assert.deepEqual(after, before, "the tenant got a new policy");
    log(`hostile objects: ${urls.length} URLs opened by the admin (${opened} rendered), nothing ran`);
  }

  // the stylesheet, scripts and charts come from this server only
  console.log("PASS");
} finally {
  await browser.close();
}
