import { describeCachedLoad } from './load.js';

// The CI-sized load: 20 connections for 5 s. The 50-connection minute is in npm run test:soak.
describeCachedLoad(20, 5);
