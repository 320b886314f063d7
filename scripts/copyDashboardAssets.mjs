// tsc compiles only TypeScript: the dashboard page's own HTML, script and styles are copied beside
// the compiled dashboard module, which reads them relative to itself (src/dashboard/page.ts).
import { cpSync } from 'node:fs';
import process from 'node:process';

const outDir = process.argv[2] ?? 'dist';
cpSync('src/dashboard/assets', `${outDir}/dashboard/assets`, { recursive: true });
