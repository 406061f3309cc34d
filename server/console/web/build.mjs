// Builds the console's assets into ../dist, which is committed and
// embedded by server/console (go:embed), so building boxkite needs no
// node. CI rebuilds and fails when dist/ differs (.ci/run).
//
//   npm ci && npm run build
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'dist');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const common = {
  bundle: true, minify: true, sourcemap: false, logLevel: 'warning',
  target: ['chrome110', 'firefox115', 'safari16'], legalComments: 'eof', charset: 'utf8',
};
await build({ ...common, entryPoints: [join(here, 'src', 'main.js')], outfile: join(out, 'app.js'), format: 'iife' });
await build({ ...common, entryPoints: [join(here, 'src', 'app.css')], outfile: join(out, 'app.css') });
copyFileSync(join(here, 'src', 'icon.svg'), join(out, 'icon.svg'));
