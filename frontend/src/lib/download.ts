// Hand a file to the browser's downloads, from text or a data: URL (a chart's PNG).

export function saveText(name: string, text: string, mime: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: mime }))
  saveUrl(name, url)
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
}

export function saveUrl(name: string, url: string): void {
  const a = document.createElement('a')
  a.href = url
  a.download = name
  document.body.appendChild(a)
  a.click()
  a.remove()
}
