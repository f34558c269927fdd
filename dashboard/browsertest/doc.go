// Package browsertest drives the dashboard (package dashboard) in a real
// headless Chromium with chromedp: each page loads without console
// errors and shows the numbers the demo data set holds, a dead-letter
// requeue and a session revoke work end to end, and every page is
// screenshotted. Over the keyspaces the example programs of the five
// reference systems leave (examples/ai-platform, home-automation,
// presence-service, sensor-collector and chat-app; docs/<system>.md in
// the repository describes each), every page loads, the schema page
// agrees with the program's clean audit, and the pages of each program's
// features show its data. Screenshots go to $DASHBOARD_SCREENSHOTS, else
// a temporary directory: seed-<page>.png for the AI platform, and
// seedNNN-<page>.png for the others (000 home-automation, 002
// presence-service, 003 sensor-collector, 004 chat-app). It is a module
// of its own so that the library never depends on chromedp. The tests
// skip, saying so, when no chromium is installed; .ci/run installs
// Debian's.
package browsertest
