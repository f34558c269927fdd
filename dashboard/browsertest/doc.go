// Package browsertest drives the dashboard (package dashboard) in a real
// headless Chromium with chromedp: each page loads without console
// errors and shows the numbers the demo data set holds, a dead-letter
// requeue and a session revoke work end to end, and every page is
// screenshotted. It is a module of its own so that the library never
// depends on chromedp. The tests skip, saying so, when no chromium is
// installed; .ci/run installs Debian's.
package browsertest
