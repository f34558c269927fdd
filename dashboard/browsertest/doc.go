// Package browsertest drives the dashboard (package dashboard) in a real
// headless Chromium with chromedp: each page loads without console
// errors and shows the numbers the demo data set holds, fits a 1400 px
// and a 420 px wide screen without sideways scrolling, and is
// screenshotted at both widths (<page>-1400.png, <page>-420.png); the
// actions work end to end, each checked in Redis (every queue action:
// pause, resume, requeue and delete of one or the selected, requeue all,
// purge dead, cancel, run now; revoke, block, revoke all, lift), with
// their confirmations; the queue page pages, filters, shows a corrupt
// entry, a job's page and the 90-day chart; the schema page shows the
// largest keys, strays by prefix and the prefix hint, and inspect's
// "more" pages a hash; every API request carries the request header;
// the token is dropped from the URL
// without a history entry and the token box starts the page once. Over
// the keyspaces the example programs of the five reference systems leave
// (examples/ai-platform, home-automation, presence-service,
// sensor-collector and chat-app; docs/<system>.md in the repository
// describes each), every page loads, the schema page agrees with the
// program's clean audit, and the pages of each program's features show
// its data. Screenshots go to $SCREENSHOT_DIR or $DASHBOARD_SCREENSHOTS,
// else a temporary directory: seed-<page>-<width>.png for the AI platform
// (and dashboard-schema.png, dashboard-queues.png: the README's), and
// seedNNN-<page>.png for the others (000 home-automation, 002
// presence-service, 003 sensor-collector, 004 chat-app). It is a module
// of its own so that the library never depends on chromedp. The tests
// skip, saying so, when no chromium is installed; .ci/run installs
// Debian's.
package browsertest
