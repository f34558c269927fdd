// Package browsertest drives the dashboard (package dashboard) in a real
// headless Chromium with chromedp: each page loads without console
// errors and shows the numbers the demo data set holds, a dead-letter
// requeue and a session revoke work end to end, and every page is
// screenshotted. Over the keyspaces the seed systems' programs leave
// (examples/ai-platform for seed 001; home-automation, presence-service,
// sensor-collector and chat-app for seeds 000, 002, 003 and 004), every
// page loads, the schema page agrees with the program's clean audit, and
// the pages of each program's features show its data (screenshots
// seedNNN-<page>.png in $DASHBOARD_SCREENSHOTS, else a temporary
// directory). It is a module of its own so that the library never
// depends on chromedp. The tests skip, saying so, when no chromium is
// installed; .ci/run installs Debian's.
package browsertest
