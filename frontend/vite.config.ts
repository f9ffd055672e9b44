/// <reference types="vitest/config" />
import { defineConfig } from 'vite'
import react from '@vitejs/plugin-react'

// The backend serves the built UI from backend/loupe/static with an SPA fallback.
// In development (`npm run dev`) the API and the live WebSocket go to a local backend.
declare const process: { env: Record<string, string | undefined> } // Node's, without @types/node
const backend = process.env.LOUPE_BACKEND ?? 'http://127.0.0.1:8470'

export default defineConfig({
  plugins: [react()],
  build: {
    outDir: '../backend/loupe/static',
    emptyOutDir: true,
    chunkSizeWarningLimit: 900,
  },
  server: {
    proxy: {
      '/api': { target: backend, ws: true, changeOrigin: true },
      '/healthz': { target: backend },
    },
  },
  test: {
    environment: 'node',
    include: ['src/**/*.test.ts'],
    css: { include: [/styles\.css/] }, // palette.test.ts reads the theme colours from it
  },
})
