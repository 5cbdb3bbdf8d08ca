// Reads the peer TLS material named by the flags --peer-cert-file, --peer-key-file, --peer-trusted-ca-file.

import { readFile } from 'node:fs/promises';
import type { PeerTlsOptions } from './options.js';

export interface PeerTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly trustedCaFile: string;
}

export async function loadPeerTlsFiles(files: PeerTlsFiles): Promise<PeerTlsOptions> {
  const read = async (flag: string, path: string): Promise<string> => {
    try {
      return await readFile(path, 'utf8');
    } catch (error) {
      throw new Error(`${flag}: cannot read ${path}: ${(error as Error).message}`);
    }
  };
  const [certPem, keyPem, trustedCaPem] = await Promise.all([
    read('--peer-cert-file', files.certFile),
    read('--peer-key-file', files.keyFile),
    read('--peer-trusted-ca-file', files.trustedCaFile),
  ]);
  return { certPem, keyPem, trustedCaPem };
}
