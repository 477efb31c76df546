/**
 * The sign-in page: one labelled field for the token. Without users it says how to add one instead.
 *
 * @example
 * res.end(loginPage(true, false));
 */
export function loginPage(hasUsers: boolean, failed: boolean): string {
  const form = hasUsers
    ? `<form method="post" action="/dashboard/login" class="login">
  <label for="token">Access token</label>
  <input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
  <button type="submit">Sign in</button>
</form>`
    : `<p>No dashboard user is configured. Set <code>HOOKLEDGER_DASHBOARD_TOKEN</code> (16 characters or more) or
<code>dashboard.users</code> in the configuration, then restart.</p>`;
  const error = failed
    ? `<p class="error" role="alert">That token or link is not valid. Check it, or ask for a new one.</p>`
    : "";
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · hookledger</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/dashboard/assets/app.css">
</head>
<body>
<main class="narrow">
<h1>hookledger</h1>
${error}
${form}
</main>
</body>
</html>
`;
}
