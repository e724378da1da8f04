import { describeCachedLoad } from '../load.js';

describeCachedLoad(50, 60);
