// Package browsertest drives the dashboard (package dashboard) in a real
// headless Chromium with chromedp: each page loads without console
// errors and shows the numbers the demo data set holds, fits a 1400 px
// and a 420 px wide screen without sideways scrolling, and is
// screenshotted at both widths (<page>-1400.png, <page>-420.png); the
// actions work end to end (requeue, revoke, block, revoke all, lift, and
// the paged queue backend's pause, bulk delete and job page when the tree
// has it), with their confirmations; the token is dropped from the URL
// without a history entry and the token box starts the page once. Over
// the keyspaces the example programs of the five reference systems leave
// (examples/ai-platform, home-automation, presence-service,
// sensor-collector and chat-app; docs/<system>.md in the repository
// describes each), every page loads, the schema page agrees with the
// program's clean audit, and the pages of each program's features show
// its data. TestPageAgainstContract drives the page over a stub of the
// API it is built to (the paged queue endpoints and their actions, the
// schema's prefixes and guesses, inspect's pages), whatever this tree's
// backend answers. Screenshots go to $SCREENSHOT_DIR or $DASHBOARD_SCREENSHOTS,
// else a temporary directory: seed-<page>-<width>.png for the AI platform
// (and dashboard-schema.png, dashboard-queues.png: the README's), and
// seedNNN-<page>.png for the others (000 home-automation, 002
// presence-service, 003 sensor-collector, 004 chat-app). It is a module
// of its own so that the library never depends on chromedp. The tests
// skip, saying so, when no chromium is installed; .ci/run installs
// Debian's.
package browsertest
