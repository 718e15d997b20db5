import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    environment: 'node',
    setupFiles: ['test/setup.ts'],
    // Component tests import @jupyterlab/ui-components, whose web components use
    // extensionless ESM imports that only Vite's resolver understands.
    server: {
      deps: { inline: [/@jupyter\/web-components/, /@microsoft\/fast/] }
    }
  }
});
