import { describeCachedLoad } from '../e2e/load.js';

describeCachedLoad(50, 60);
