#!/usr/bin/env node
import './register.mjs';

await import('../cli/main.ts');
