import http from 'node:http';

export interface PostAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** POSTs JSON to one URL over a pool of keep-alive HTTP/1.1 connections, one request per connection at a time. */
export class HttpPoster {
  private readonly agent: http.Agent;

  constructor(
    private readonly url: string,
    connections: number,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: connections, maxFreeSockets: connections });
  }

  post(body: Buffer): Promise<PostAnswer> {
    return new Promise((resolve, reject) => {
      const request = http.request(
        this.url,
        {
          method: 'POST',
          agent: this.agent,
          headers: { 'content-type': 'application/json', accept: 'application/json', 'content-length': body.length },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      request.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
