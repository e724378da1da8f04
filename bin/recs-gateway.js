#!/usr/bin/env node
// The built command line (npm install builds dist/ through the prepare script).
import { main } from '../dist/main.js';

process.exitCode = await main(process.argv.slice(2));
