// Runs before the page is drawn (a plain script in <head>, not part of the bundle) so that a
// dark theme never flashes light first. Keep in step with src/lib/theme.ts: the same key and
// values ("light", "dark"; anything else follows the system).
;(function () {
  var choice = null
  try {
    choice = localStorage.getItem('loupe.theme')
  } catch (e) {}
  if (choice !== 'light' && choice !== 'dark') {
    choice = window.matchMedia && matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'
  }
  document.documentElement.dataset.theme = choice
})()
