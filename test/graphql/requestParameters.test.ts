import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { HeaderList } from '../../src/http/headers.js';
import {
  ambiguousRequestResponse,
  MAX_BATCH_OPERATIONS,
  possibleOperations,
  readGetRequest,
  readPostRequest,
  type RequestParameters,
} from '../../src/graphql/requestParameters.js';

const JSON_HEADERS: HeaderList = [['content-type', 'application/json']];
const post = (body: string | Buffer, path = '/graphql', headers: HeaderList = JSON_HEADERS) =>
  readPostRequest(path, headers, typeof body === 'string' ? Buffer.from(body) : body);

describe('readGetRequest', () => {
  it('reads the four parameters', () => {
    const variables = encodeURIComponent('{"b": 1.0, "a": 9007199254740993}');
    expect(readGetRequest(`/graphql?query=%7B+me+%7D&operationName=Me&variables=${variables}&extensions=%7B%7D&x=1`)).toEqual({
      kind: 'graphql',
      params: { query: '{ me }', operationName: 'Me', variables: { a: 2 ** 53, b: 1 }, extensions: {} },
      canonicalVariables: '{"a":9007199254740993,"b":1.0}',
      orderedVariables: '{"a":9007199254740993,"b":1.0}',
      canonicalExtensions: '',
      documentIds: [null],
      namesDocumentId: false,
      idsSent: [],
      canonicalExtensionsById: '',
      otherUrlParameters: 'x=1',
      otherMembers: '',
    });
  });

  it('reads absent and empty-object variables as none', () => {
    for (const path of ['/graphql?query=x', '/graphql?query=x&variables=%7B%7D']) {
      expect(readGetRequest(path)).toMatchObject({ kind: 'graphql', canonicalVariables: '{}', params: { variables: {} } });
    }
  });

  it('reads empty and null variables and extensions as none, as graphql-http does, marked as read otherwise: Apollo Server 4 answers 400', () => {
    for (const name of ['variables', 'extensions']) {
      for (const path of [`/graphql?query=x&${name}=`, `/graphql?query=x&${name}`, `/graphql?query=x&${name}=null`]) {
        expect(readGetRequest(path), path).toMatchObject({ kind: 'graphql', canonicalVariables: '{}', canonicalExtensions: '', readDifferently: `${name}-not-object` });
      }
    }
    expect(readGetRequest('/graphql?query=x&variables=%7B%7D')).not.toHaveProperty('readDifferently');
  });

  it('an empty operationName is a name, not none: origins differ on it', () => {
    expect(readGetRequest('/graphql?query=x&operationName=')).toMatchObject({ params: { operationName: '' } });
    expect(post('{"query":"x","operationName":""}')).toMatchObject({ params: { operationName: '' } });
  });

  it('reads identical repeats once, also when spelled differently, as Yoga does, marked as read otherwise: Apollo Server 4 answers 400', () => {
    expect(readGetRequest('/graphql?query=a&query=%61')).toMatchObject({ kind: 'graphql', params: { query: 'a' }, readDifferently: 'parameter-repeated' });
    expect(readGetRequest('/graphql?query=a&variables=%7B%22x%22:1%7D&variables=%7B+%22x%22+:+1%7D')).toMatchObject({
      kind: 'graphql',
      canonicalVariables: '{"x":1}',
      readDifferently: 'parameter-repeated',
    });
    expect(post('{"query":"a"}', '/graphql?query=a&query=a')).toMatchObject({ kind: 'graphql', readDifferently: 'parameter-repeated' });
  });

  it.each([
    '/graphql?query=a&query=b',
    '/graphql?query=a&%71uery=b',
    '/graphql?operationName=A&operationName=B&query=x',
    '/graphql?query=x&variables=%7B%7D&variables=%7B%22a%22:1%7D',
    '/graphql?query=x&extensions=%7B%7D&extensions=',
  ])('%j repeats a parameter with different values: ambiguous', (path) => {
    expect(readGetRequest(path)).toEqual({ kind: 'ambiguous', reason: 'repeated-parameter' });
  });

  it('variables naming a key twice with different values are ambiguous', () => {
    expect(readGetRequest(`/graphql?query=x&variables=${encodeURIComponent('{"a":1,"a":2}')}`)).toEqual({ kind: 'ambiguous', reason: 'repeated-member' });
  });

  it('number spellings are different keys', () => {
    const keyOf = (number: string) => readGetRequest(`/graphql?query=x&variables=${encodeURIComponent(`{"n":${number}}`)}`);
    expect(keyOf('1')).toMatchObject({ canonicalVariables: '{"n":1}' });
    expect(keyOf('1.0')).toMatchObject({ canonicalVariables: '{"n":1.0}' });
    expect(keyOf('9007199254740992')).toMatchObject({ canonicalVariables: '{"n":9007199254740992}' });
    expect(keyOf('9007199254740993')).toMatchObject({ canonicalVariables: '{"n":9007199254740993}' });
  });

  it.each([
    ['/graphql?query=%FF', 'invalid-percent-encoding'],
    ['/graphql?query=%C3', 'invalid-percent-encoding'],
    ['/graphql?query=%zz', 'invalid-percent-encoding'],
    ['/graphql?query=%4', 'invalid-percent-encoding'],
    ['/graphql?query=a%', 'invalid-percent-encoding'],
    ['/graphql?query=%C0%AF', 'invalid-percent-encoding'],
    ['/graphql?query=%ED%A0%80', 'invalid-percent-encoding'],
    ['/graphql?query=%F4%90%80%80', 'invalid-percent-encoding'],
    ['/graphql?query=%E2%82x', 'invalid-percent-encoding'],
    ['/graphql?query=x&variables=%5B%5D', 'variables-not-object'],
    ['/graphql?query=x&variables=1', 'variables-not-object'],
    ['/graphql?query=x&variables=%7B', 'variables-not-object'],
    ['/graphql?query=x&extensions=%22e%22', 'extensions-not-object'],
    ['/graphql?query=x&extensions=nope', 'extensions-not-object'],
  ])('%j is uninterpretable (%s)', (path, reason) => {
    expect(readGetRequest(path)).toEqual({ kind: 'uninterpretable', reason });
  });

  it('does not read other parameters, even malformed ones', () => {
    expect(readGetRequest('/graphql?query=x&other=%FF&%zz=1')).toMatchObject({ kind: 'graphql', params: { query: 'x' } });
  });

  it('keeps a leading byte order mark, as origins do: %EF%BB%BFFoo is not the operation Foo', () => {
    expect(readGetRequest('/graphql?query=x&operationName=%EF%BB%BFFoo')).toMatchObject({ params: { operationName: '\uFEFFFoo' } });
  });

    it('decodes UTF-8 escapes and + as a space', () => {
    expect(readGetRequest('/graphql?query=%C3%A9+%F0%9F%98%80')).toMatchObject({ params: { query: 'é 😀' } });
  });
});

describe('what else the origin sees, for the key', () => {
  it('extensions but persistedQuery, in their canonical text', () => {
    const hash = { version: 1, sha256Hash: 'a'.repeat(64) };
    expect(post(JSON.stringify({ query: 'x', extensions: { persistedQuery: hash } }))).toMatchObject({ canonicalExtensions: '' });
    expect(post(JSON.stringify({ query: 'x', extensions: { tenant: 'acme', persistedQuery: hash } }))).toMatchObject({ canonicalExtensions: '{"tenant":"acme"}' });
    expect(post(JSON.stringify({ query: 'x', extensions: { clientLibrary: { name: '@apollo/client', version: '4.3.8' } } }))).toMatchObject({ canonicalExtensions: '' });
    expect(post('{"query":"x","extensions":{ "b" : 1.0, "a":"\\u0061" }}')).toMatchObject({ canonicalExtensions: '{"a":"a","b":1.0}' });
    expect(readGetRequest(`/graphql?query=x&extensions=${encodeURIComponent('{"tenant":"acme"}')}`)).toMatchObject({ canonicalExtensions: '{"tenant":"acme"}' });
  });

  it('keeps empty pairs among the others, and leaves a query string of more pairs than origins read to the origin', () => {
    const variables = `variables=${encodeURIComponent('{"s":"victim"}')}`;
    // query, 998 empty pairs and variables: 1,000 pairs, all of which Node's querystring and qs read.
    expect(readGetRequest(`/graphql?query=x${'&'.repeat(999)}${variables}`)).toMatchObject({ otherUrlParameters: '&'.repeat(997), canonicalVariables: '{"s":"victim"}' });
    // One pair more, and they would drop variables: padding that would hide it from the origin, not the key.
    expect(readGetRequest(`/graphql?query=x${'&'.repeat(1000)}${variables}`)).toEqual({ kind: 'uninterpretable', reason: 'too-many-parameters' });
    expect(readGetRequest(`/graphql?query=x&${variables}`)).toMatchObject({ otherUrlParameters: '', canonicalVariables: '{"s":"victim"}' });
  });

  it.each([
    // A comment hides a second variables from the printed document, not from a parser splitting on ;
    [`query=${encodeURIComponent('query Q($s: String) { echo(s: $s) } #')};variables=${encodeURIComponent('{"s":"evil"}')}`],
    [`query=x&variables=${encodeURIComponent('{"s":"a')};b"}`],
    [`query=x&operationName=A;B`],
    [`query=x;&extensions=%7B%7D`],
  ])('a raw ; in a GraphQL parameter is not svc-cache\'s to read: %s', (query) => {
    expect(readGetRequest(`/graphql?${query}`)).toEqual({ kind: 'uninterpretable', reason: 'semicolon-in-parameter' });
    expect(post('{"query":"x"}', `/graphql?${query}`)).toEqual({ kind: 'uninterpretable', reason: 'semicolon-in-parameter' });
  });

  it.each([`x=1;query=${encodeURIComponent('{ b }')}&query=x`, 'query=x&variables;x=1', 'query=x&y=2; operationName=A'])(
    'a raw ; before the name of a GraphQL parameter is not svc-cache\'s to read either: %s',
    (query) => {
      expect(readGetRequest(`/graphql?${query}`)).toEqual({ kind: 'uninterpretable', reason: 'semicolon-in-parameter' });
    },
  );

  it('keys a raw ; in another parameter as sent, and reads an escaped one', () => {
    expect(readGetRequest('/graphql?query=x&tenant=a;b')).toMatchObject({ kind: 'graphql', otherUrlParameters: 'tenant=a;b' });
    expect(readGetRequest('/graphql?query=a%3Bb')).toMatchObject({ kind: 'graphql', params: { query: 'a;b' } });
  });

  it('the URL parameters other than GraphQL\'s, as sent', () => {
    expect(readGetRequest('/graphql?query=x')).toMatchObject({ otherUrlParameters: '' });
    expect(readGetRequest('/graphql?query=x&variables=%7B%7D&operationName=A&extensions=%7B%7D')).toMatchObject({ otherUrlParameters: '' });
    expect(readGetRequest('/graphql?tenant=acme&%71uery=x&&v=2')).toMatchObject({ otherUrlParameters: 'tenant=acme&&v=2' });
    expect(post('{"query":"x"}', '/graphql?flag')).toMatchObject({ otherUrlParameters: 'flag' });
    expect(post('{"query":"x"}')).toMatchObject({ otherUrlParameters: '' });
  });

  it("a POST body's members other than GraphQL's, in their canonical text", () => {
    expect(post('{"query":"x","operationName":"A","variables":{},"extensions":{}}')).toMatchObject({ otherMembers: '' });
    expect(post('{"query":"x","documentId":"d1"}')).toMatchObject({ otherMembers: '{"documentId":"d1"}' });
    expect(post('{ "tenant" : { "b" : 1.0, "a":"\\u0061" }, "query":"x", "documentId":"d1"}')).toMatchObject({
      otherMembers: '{"documentId":"d1","tenant":{"b":1.0,"a":"a"}}',
    });
    expect(post('{"query":"x","documentId":null}')).toMatchObject({ otherMembers: '{"documentId":null}' });
    expect(readGetRequest('/graphql?query=x&documentId=d1')).toMatchObject({ otherMembers: '', otherUrlParameters: 'documentId=d1' });
  });
});

describe('possibleOperations', () => {
  const MAX_BODY_BYTES = 1024 * 1024;
  const MUTATION = [{ query: 'mutation { a }', operationName: undefined }];
  /** What an origin may run that svc-cache cannot see: a stored document, or a body it cannot read. */
  const UNSEEN = [{ query: undefined, operationName: undefined }];

  it('counts a stored document an origin may run: an id beside a query text, or in a form or the URL', () => {
    const json = (body: string, path = '/graphql') => possibleOperations(path, JSON_HEADERS, Buffer.from(body), MAX_BODY_BYTES);
    const STORED = { query: undefined, operationName: undefined };
    expect(json('{"query":"{ a }","documentId":"m"}')).toEqual([{ query: '{ a }', operationName: undefined }, STORED]);
    // Hot Chocolate runs a document it kept under an id: a body svc-cache does not read keeps its id.
    expect(json('{"query":"{ a }","id":"m"}')).toEqual([{ query: '{ a }', operationName: undefined }, STORED]);
    expect(json('{"query":"{ a }","id":""}')).toEqual([{ query: '{ a }', operationName: undefined }]);
    expect(json('{"query":"{ a }"}', '/graphql?ID=m')).toEqual([{ query: '{ a }', operationName: undefined }, STORED]);
    expect(json('{}', '/graphql?documentId=m')).toEqual([STORED]);
    expect(possibleOperations('/graphql', [['content-type', 'application/x-www-form-urlencoded']], Buffer.from('doc_id=m'), MAX_BODY_BYTES)).toEqual([STORED]);
    expect(json('{}', '/graphql?tenant=acme')).toEqual([]);
    expect(json('{"query":"{ a }","documentId":null}', '/graphql?documentId=')).toEqual([{ query: '{ a }', operationName: undefined }]);
    // An id in the URL leaves the body's operationName to narrow its mutations.
    expect(json('{"query":"mutation A { a } mutation B { b }","operationName":"A"}', '/graphql?documentId=m')).toEqual([
      { query: 'mutation A { a } mutation B { b }', operationName: 'A' },
      STORED,
    ]);
  });

  it('reads a form only under its own content type, and refuses one that gives query twice', () => {
    const form = Buffer.from('query=mutation%20%7B%20a%20%7D&query=%7B%20b%20%7D');
    expect(possibleOperations('/graphql', [['content-type', 'multipart/form-data; boundary=x']], form, MAX_BODY_BYTES)).toEqual(UNSEEN);
    expect(possibleOperations('/graphql', [['content-type', 'application/x-www-form-urlencoded']], form, MAX_BODY_BYTES)).toBe('ambiguous');
    expect(possibleOperations('/graphql', [['content-type', 'text/plain']], Buffer.from('{"query":"mutation { a }"}'), MAX_BODY_BYTES)).toEqual(MUTATION);
  });

  it('counts a body no reading of which is JSON as one svc-cache cannot see: Hot Chocolate reads trailing commas and comments', () => {
    const json = (body: string) => possibleOperations('/graphql', JSON_HEADERS, Buffer.from(body), MAX_BODY_BYTES);
    expect(json('{"query":"mutation { a }",}')).toEqual(UNSEEN);
    expect(json('/* c */ {"query":"mutation { a }"}')).toEqual(UNSEEN);
    expect(json('')).toEqual([]);
    // A form's content type beside JSON's makes no text read that gives no query.
    const formAndJson: HeaderList = [...JSON_HEADERS, ['content-type', 'application/x-www-form-urlencoded']];
    expect(possibleOperations('/graphql', formAndJson, Buffer.from('{"query":"mutation { a }",}'), MAX_BODY_BYTES)).toEqual(UNSEEN);
    // Hot Chocolate reads the bytes as UTF-8 whatever the charset: a reading in another one does not hide it.
    const utf7: HeaderList = [['content-type', 'application/json; charset=utf-7']];
    expect(possibleOperations('/graphql', utf7, Buffer.from('{"query":"{ b }"+AH0-'), MAX_BODY_BYTES)).toEqual([{ query: '{ b }', operationName: undefined }, ...UNSEEN]);
    // Nor does a form's reading, beside JSON's content type, hide the JSON.
    const form = Buffer.from('{"query":"mutation { a } #&query={ b }&x=",}');
    expect(possibleOperations('/graphql', formAndJson, form, MAX_BODY_BYTES)).toContainEqual(UNSEEN[0]);
    // Origins run every element of a batch longer than svc-cache reads.
    const batch = JSON.stringify([...Array.from({ length: 100 }, () => ({ query: '{ b }' })), { query: 'mutation { a }' }]);
    expect(json(batch)).toContainEqual(UNSEEN[0]);
    expect(possibleOperations('/graphql', [['content-type', 'application/graphql']], Buffer.from('mutation { a }'), MAX_BODY_BYTES)).toEqual(MUTATION);
  });

  it('reads a URL with a raw ; also as origins that split on it read it', () => {
    const json: HeaderList = [['content-type', 'application/json']];
    const hidden = `/graphql?x=1;query=${encodeURIComponent('mutation { a }')}`;
    expect(possibleOperations(hidden, json, Buffer.from('{}'), MAX_BODY_BYTES)).toEqual(MUTATION);
    expect(possibleOperations(`/graphql?query=${encodeURIComponent('{ b }')};query=x`, json, Buffer.from('{}'), MAX_BODY_BYTES)).toBe('ambiguous');
    expect(possibleOperations(`/graphql?x=1;y=2`, json, Buffer.from('{"query":"mutation { a }"}'), MAX_BODY_BYTES)).toEqual(MUTATION);
  });

  it("reads a GraphQL multipart request's operations field, one operation or a batch, and a body busboy cannot parse as one svc-cache cannot see", () => {
    const multipart = (operations: string) =>
      Buffer.from(`--b\r\nContent-Disposition: form-data; name="operations"\r\n\r\n${operations}\r\n--b\r\nContent-Disposition: form-data; name="0"; filename="f"\r\n\r\nbytes\r\n--b--\r\n`);
    const headers: HeaderList = [['content-type', 'multipart/form-data; boundary=b']];
    expect(possibleOperations('/graphql', headers, multipart('{"query":"mutation { a }"}'), MAX_BODY_BYTES)).toEqual(MUTATION);
    expect(possibleOperations('/graphql', headers, multipart('[{"query":"{ b }"},{"query":"mutation { a }"}]'), MAX_BODY_BYTES)).toEqual([{ query: '{ b }', operationName: undefined }, ...MUTATION]);
    expect(possibleOperations('/graphql', [['content-type', 'multipart/form-data']], multipart('{"query":"mutation { a }"}'), MAX_BODY_BYTES)).toEqual(UNSEEN);
  });

  it('reads raw DEFLATE under deflate too, as ASP.NET Core reads it', () => {
    const raw = deflateRawSync(Buffer.from('{"query":"mutation { a }"}'));
    expect(possibleOperations('/graphql', [['content-type', 'application/json'], ['content-encoding', 'deflate']], raw, MAX_BODY_BYTES)).toEqual(MUTATION);
  });

  it('reads a compressed body decoded, as body-parser inflates it', () => {
    const json = Buffer.from('{"query":"mutation { a }"}');
    const codings: Array<[string, Buffer]> = [
      ['gzip', gzipSync(json)],
      ['X-Gzip', gzipSync(json)],
      ['deflate', deflateSync(json)],
      [' br ', brotliCompressSync(json)],
    ];
    for (const [coding, body] of codings) {
      expect(possibleOperations('/graphql', [['content-type', 'application/json'], ['content-encoding', coding]], body, MAX_BODY_BYTES)).toEqual(MUTATION);
    }
    const form = gzipSync(Buffer.from('query=mutation+%7B+a+%7D'));
    expect(possibleOperations('/graphql', [['content-type', 'application/x-www-form-urlencoded'], ['content-encoding', 'gzip']], form, MAX_BODY_BYTES)).toEqual(MUTATION);
  });

  it('reads a body in the UTF charset its content type declares, as body-parser decodes it', () => {
    const json = '{"query":"mutation { a }"}';
    const utf16be = (text: string) => Buffer.from(text, 'utf16le').swap16();
    const utf32 = (text: string, littleEndian: boolean) => {
      const bytes = Buffer.alloc(4 * text.length);
      [...text].forEach((char, index) => (littleEndian ? bytes.writeUInt32LE(char.codePointAt(0)!, 4 * index) : bytes.writeUInt32BE(char.codePointAt(0)!, 4 * index)));
      return bytes;
    };
    const bodies: Array<[string, Buffer]> = [
      ['utf-16le', Buffer.from(json, 'utf16le')],
      ['UTF-16BE', utf16be(json)],
      ['utf_16-le', Buffer.from(json, 'utf16le')],
      ['utf-16', utf16be(`\ufeff${json}`)],
      ['"utf-16"', utf16be(json)],
      ['utf-32le', utf32(json, true)],
      ['utf-32', utf32(`\ufeff${json}`, false)],
      ['utf-7', Buffer.from('{"query":"+AG0-utation { a }"}')],
      ['utf-7-imap', Buffer.from('{"query":"&AG0-utation { a }"}')],
      // iconv-lite drops a year suffix: body-parser decodes this as UTF-16LE.
      ['"utf-16le:2000"', Buffer.from(json, 'utf16le')],
    ];
    for (const [charset, body] of bodies) {
      // UTF-7 is ASCII but where it shifts: the UTF-8 reading finds a query too, not the mutation.
      expect(possibleOperations('/graphql', [['content-type', `application/json; charset=${charset}`]], body, MAX_BODY_BYTES), charset).toContainEqual(MUTATION[0]);
    }
    const form = Buffer.from('query=mutation+%7B+a+%7D', 'utf16le');
    expect(possibleOperations('/graphql', [['content-type', 'application/x-www-form-urlencoded; charset=utf-16le']], form, MAX_BODY_BYTES)).toEqual(MUTATION);
    const compressed = gzipSync(Buffer.from(json, 'utf16le'));
    expect(possibleOperations('/graphql', [['content-type', 'text/plain; charset=utf-16le'], ['content-encoding', 'gzip']], compressed, MAX_BODY_BYTES)).toEqual(MUTATION);
  });

  it("reads a POST's URL parameters, as express-graphql does, and refuses a URL that gives query twice", () => {
    const url = `/graphql?query=${encodeURIComponent('query Q { b } mutation M { a }')}&operationName=M&x=%ZZ`;
    expect(possibleOperations(url, [], Buffer.alloc(0), MAX_BODY_BYTES)).toEqual([{ query: 'query Q { b } mutation M { a }', operationName: 'M' }]);
    expect(possibleOperations('/graphql?query=mutation+%7B+a+%7D&query=mutation%20%7B%20a%20%7D', [], Buffer.from('x'), MAX_BODY_BYTES)).toEqual([...UNSEEN, ...MUTATION]);
    expect(possibleOperations('/graphql?query=mutation+%7B+a+%7D&query=%7B+b+%7D', [], Buffer.alloc(0), MAX_BODY_BYTES)).toBe('ambiguous');
    expect(possibleOperations('/graphql?operationName=A&operationName=B', [], Buffer.alloc(0), MAX_BODY_BYTES)).toBe('ambiguous');
  });

  it('lets no operationName narrow the mutations when the URL and the body each give parameters: origins mix them', () => {
    const body = Buffer.from('{"query":"query Q { b } mutation M { a }","operationName":"Q"}');
    expect(possibleOperations('/graphql?operationName=M', [['content-type', 'text/plain']], body, MAX_BODY_BYTES)).toEqual([
      { query: 'query Q { b } mutation M { a }', operationName: undefined },
    ]);
    const url = `/graphql?query=${encodeURIComponent('query Q { b } mutation M { a }')}&operationName=Q`;
    expect(possibleOperations(url, [['content-type', 'text/plain']], Buffer.from('{"operationName":"M"}'), MAX_BODY_BYTES)).toEqual([
      { query: 'query Q { b } mutation M { a }', operationName: undefined },
    ]);
  });

  it('decodes no further than the body limit, refusing a body larger decoded, and reads nothing from a body that does not decode', () => {
    const bomb = gzipSync(Buffer.from(`{"query":"mutation { a }","padding":"${' '.repeat(4 * MAX_BODY_BYTES)}"}`));
    expect(bomb.length).toBeLessThan(MAX_BODY_BYTES / 100);
    expect(possibleOperations('/graphql', [['content-encoding', 'gzip']], bomb, MAX_BODY_BYTES)).toBe('too-large');
    expect(possibleOperations('/graphql', [['content-encoding', 'gzip']], bomb, 5 * MAX_BODY_BYTES)).toEqual(MUTATION);
    const truncated = gzipSync(Buffer.from('{"query":"mutation { a }"}')).subarray(0, 20);
    // Neither its bytes (not UTF-8) nor their decoding can be read by any origin.
    expect(possibleOperations('/graphql', [['content-encoding', 'gzip']], truncated, MAX_BODY_BYTES)).toEqual([]);
  });
});

describe('readPostRequest', () => {
  it('reads the body members, keeping number literals in the canonical variables', () => {
    expect(post('{"query":"query Q($n: Int) { n(v: $n) }","operationName":"Q","variables":{"n":1.0},"extensions":{"e":true},"other":1}')).toEqual({
      kind: 'graphql',
      params: { query: 'query Q($n: Int) { n(v: $n) }', operationName: 'Q', variables: { n: 1 }, extensions: { e: true } },
      canonicalVariables: '{"n":1.0}',
      orderedVariables: '{"n":1.0}',
      canonicalExtensions: '{"e":true}',
      documentIds: [null],
      namesDocumentId: false,
      idsSent: [],
      canonicalExtensionsById: '{"e":true}',
      otherUrlParameters: '',
      otherMembers: '{"other":1}',
    });
  });

  it("gives the stored-document ids the body's documentId and doc_id and the URL's name, still keyed as other members", () => {
    expect(post('{"documentId":"d1","variables":{"n":1}}')).toMatchObject({ params: { query: undefined }, documentIds: ['d1'], otherMembers: '{"documentId":"d1"}' });
    expect(post('{"doc_id":"d1"}')).toMatchObject({ documentIds: ['d1'] });
    expect(post('{"documentId":"d1","doc_id":"d2"}')).toMatchObject({ documentIds: ['d2', 'd1'] });
    expect(post('{"documentId":7}')).toMatchObject({ documentIds: [null] });
    expect(post('{"documentId":"d1"}', '/graphql?documentId=d%32')).toMatchObject({ documentIds: ['d1', 'd2'], otherUrlParameters: 'documentId=d%32' });
    expect(readGetRequest('/graphql?doc_id=a+b&documentId=%ZZ&variables=%7B%7D')).toMatchObject({ documentIds: ['a b', null], otherUrlParameters: 'doc_id=a+b&documentId=%ZZ' });
    expect(post('[{"documentId":"d1"},{"query":"{ a }"}]')).toMatchObject({ operations: [{ documentIds: ['d1'] }, { documentIds: [] }] });
  });

  it('marks with a null every other member or URL parameter an origin may read an id from, and a value holding a ;', () => {
    expect(post('{"documentId":"d1","tenant":"m"}')).toMatchObject({ documentIds: ['d1', null] });
    // Hot Chocolate's id too: it names whatever the origin kept under it.
    expect(post('{"documentId":"d1","id":"m"}')).toMatchObject({ documentIds: ['d1', null] });
    expect(post('{"documentId":"d1"}', '/graphql?queryId=m')).toMatchObject({ documentIds: ['d1', null] });
    expect(readGetRequest('/graphql?documentId=a;documentId=b')).toMatchObject({ documentIds: [null] });
    expect(readGetRequest('/graphql?documentId=a&x=1;documentId=b')).toMatchObject({ documentIds: ['a', null] });
    expect(post('[{"documentId":"d1"}]', '/graphql?documentId=m')).toMatchObject({ operations: [{ documentIds: ['d1', 'm'] }] });
  });

  it('tells whether a member or URL parameter names a stored document: documentId or doc_id', () => {
    expect(post('{"query":"{ a }","documentId":"m"}')).toMatchObject({ namesDocumentId: true });
    expect(post('{"query":"{ a }","doc_id":"m"}')).toMatchObject({ namesDocumentId: true });
    expect(post('{"query":"{ a }"}', '/graphql?documentId=m')).toMatchObject({ namesDocumentId: true });
    expect(readGetRequest('/graphql?query=%7B+a+%7D&x=1;doc_id=m')).toMatchObject({ namesDocumentId: true });
    expect(readGetRequest('/graphql?query=%7B+a+%7D&%ZZ=m')).toMatchObject({ namesDocumentId: true });
    expect(post('{"query":"{ a }","tenant":"acme"}', '/graphql?x=1')).toMatchObject({ namesDocumentId: false });
    // react-relay-network-modern sends `id` with every request: it names no stored document.
    expect(post('{"id":"TodosQuery","query":"{ a }","variables":{}}')).toMatchObject({ namesDocumentId: false });
    // Empty pairs, and null or empty ids, name nothing.
    expect(readGetRequest('/graphql?&&documentId=')).toMatchObject({ documentIds: [] });
    expect(post('{"documentId":null,"doc_id":""}')).toMatchObject({ documentIds: [] });
    // A null or empty value names nothing, nor a `;` in another parameter.
    expect(post('{"query":"{ a }","documentId":null,"doc_id":""}', '/graphql?documentId=&x=a;b')).toMatchObject({ namesDocumentId: false });
  });

  it("reads every id Hot Chocolate may take a kept document's id from: a member of any value, or a URL parameter named so in any case", () => {
    expect(post('{"id":"TodosQuery","query":"{ a }"}')).toMatchObject({ idsSent: ['TodosQuery'] });
    expect(post('{"id":7,"query":"{ a }"}')).toMatchObject({ idsSent: [null] });
    expect(post('{"id":null,"query":"{ a }"}')).toMatchObject({ idsSent: [null] });
    expect(post('{"id":"a","query":"{ a }"}', '/graphql?ID=b&x=1&%69d=c;d&iD')).toMatchObject({ idsSent: ['a', 'b', 'c;d', ''] });
    expect(readGetRequest('/graphql?query=%7B+a+%7D&id=%ZZ')).toMatchObject({ idsSent: [null] });
    expect(post('[{"query":"{ a }","id":"A"},{"query":"{ b }"}]')).toMatchObject({ operations: [{ idsSent: ['A'] }, { idsSent: [] }] });
    // ASP.NET Core splits a query string on `&` only: a `;` piece is no parameter of its own there.
    expect(readGetRequest('/graphql?query=%7B+a+%7D&x=1;id=m')).toMatchObject({ idsSent: [] });
    expect(post('{"ids":["1"],"query":"{ a }"}', '/graphql?uid=1')).toMatchObject({ idsSent: [] });
  });

  it("keys a stored document's persisted-query reference, which the key of sent text leaves out", () => {
    const reference = { persistedQuery: { version: 1, sha256Hash: 'h' }, clientLibrary: { name: '@apollo/client' }, tenant: 'a' };
    expect(post(JSON.stringify({ extensions: reference }))).toMatchObject({
      canonicalExtensions: '{"tenant":"a"}',
      // Each extension's members in the order sent: the origin's own code reads them.
      canonicalExtensionsById: '{"persistedQuery":{"version":1,"sha256Hash":"h"},"tenant":"a"}',
    });
  });

  it.each(['br', 'gzip', 'deflate', 'zstd', 'gzip, br'])('does not read a body under content-encoding %s as it came: the origin decodes it first', (coding) => {
    const headers: HeaderList = [...JSON_HEADERS, ['content-encoding', coding]];
    expect(post('{"query":"{ a }"}', '/graphql', headers)).toEqual({ kind: 'uninterpretable', reason: 'content-encoding' });
  });

  it('reads a body under content-encoding identity', () => {
    expect(post('{"query":"{ a }"}', '/graphql', [...JSON_HEADERS, ['content-encoding', 'identity']])).toMatchObject({ kind: 'graphql' });
  });

  it('null members are absent', () => {
    expect(post('{"query":null,"operationName":null,"variables":null,"extensions":null}')).toEqual({
      kind: 'graphql',
      params: { query: undefined, operationName: undefined, variables: {}, extensions: {} },
      canonicalVariables: '{}',
      orderedVariables: '{}',
      canonicalExtensions: '',
      documentIds: [],
      namesDocumentId: false,
      idsSent: [],
      canonicalExtensionsById: '',
      otherUrlParameters: '',
      otherMembers: '',
    });
  });

  it('"\\u0061" and "a" are one key; 1 and 1.0 are two', () => {
    expect(post('{"query":"x","variables":{"s":"\\u0061"}}')).toMatchObject({ canonicalVariables: '{"s":"a"}' });
    expect(post('{"query":"x","variables":{"s":"a"}}')).toMatchObject({ canonicalVariables: '{"s":"a"}' });
  });

  it.each([
    ['{"query":"a","query":"b"}'],
    ['{"query":"a","variables":{"x":1},"variables":{"x":2}}'],
    ['{"query":"a","variables":{"x":1,"x":2}}'],
  ])('%j gives a member twice with different values: ambiguous', (body) => {
    expect(post(body)).toEqual({ kind: 'ambiguous', reason: 'repeated-member' });
  });

  it('a member repeated identically is fine', () => {
    expect(post('{"query":"a","query":"a"}')).toMatchObject({ kind: 'graphql', params: { query: 'a' } });
  });

  describe('URL parameters', () => {
    it("that give a variable's members in another order than the body are ambiguous: a custom scalar reads that order", () => {
      const url = `/graphql?query=a&variables=${encodeURIComponent('{"j":{"b":1,"a":2}}')}`;
      expect(post('{"query":"a","variables":{"j":{"a":2,"b":1}}}', url)).toEqual({ kind: 'ambiguous', reason: 'url-parameter' });
      expect(post('{"query":"a","variables":{"j":{"b":1,"a":2}}}', url)).toMatchObject({ kind: 'graphql' });
      const repeated = `/graphql?query=a&variables=${encodeURIComponent('{"j":{"b":1,"a":2}}')}&variables=${encodeURIComponent('{"j":{"a":2,"b":1}}')}`;
      expect(readGetRequest(repeated)).toEqual({ kind: 'ambiguous', reason: 'repeated-parameter' });
    });

    it('that the body gives the same are fine', () => {
      expect(post('{"query":"a","variables":{"x":1,"y":2}}', `/graphql?query=a&variables=${encodeURIComponent('{"y":2, "x":1}')}&foo=1`)).toMatchObject({
        kind: 'graphql',
        canonicalVariables: '{"x":1,"y":2}',
      });
    });

    it.each([
      ['/graphql?query=b', '{"query":"a"}'],
      ['/graphql?variables=%7B%22x%22:2%7D', '{"query":"a","variables":{"x":1}}'],
      ['/graphql?variables=%7B%22x%22:1.0%7D', '{"query":"a","variables":{"x":1}}'],
      // The body lacks it: an origin that prefers URL parameters would run operationName B.
      ['/graphql?operationName=B', '{"query":"query A { a } query B { b }"}'],
      ['/graphql?variables=%7B%7D', '{"query":"a"}'],
      ['/graphql?query=a', '[{"query":"a"}]'],
    ])('%j beside %j: ambiguous', (path, body) => {
      expect(post(body, path)).toEqual({ kind: 'ambiguous', reason: 'url-parameter' });
    });

    it('given twice with different values: ambiguous', () => {
      expect(post('{"query":"a"}', '/graphql?query=a&query=b')).toEqual({ kind: 'ambiguous', reason: 'repeated-parameter' });
    });
  });

  describe('content-type', () => {
    it('two lines that differ are ambiguous; identical ones are one', () => {
      expect(post('{"query":"a"}', '/graphql', [['content-type', 'application/json'], ['content-type', 'text/plain']])).toEqual({
        kind: 'ambiguous',
        reason: 'conflicting-content-type',
      });
      expect(post('{"query":"a"}', '/graphql', [['content-type', 'application/json'], ['content-type', 'application/json']])).toMatchObject({
        kind: 'graphql',
      });
    });

    it.each([[[]], [[['content-type', 'text/plain']]], [[['content-type', 'application/graphql']]]] as Array<[HeaderList]>)(
      'anything but application/json is not read (%j)',
      (headers) => {
        expect(post('{"query":"a"}', '/graphql', headers)).toEqual({ kind: 'uninterpretable', reason: 'content-type' });
      },
    );

    it('application/json with charset=utf-8 is read, in the spellings every origin takes', () => {
      for (const contentType of ['application/json; charset=utf-8', 'application/json;charset=UTF-8', 'application/json;  charset=utf-8 ']) {
        expect(post('{"query":"a"}', '/graphql', [['content-type', contentType]]), contentType).toMatchObject({ kind: 'graphql' });
      }
    });

    // graphql-http compares the text and answers a quoted charset 415.
    it.each(['Application/JSON', 'APPLICATION/JSON; charset=utf-8', 'application/json ;charset=utf-8', 'application/jsonx', 'application/json; charset=latin1', 'application/json; charset="utf-8"'])(
      'a spelling some origins refuse is theirs to answer (%s)',
      (contentType) => {
        expect(post('{"query":"a"}', '/graphql', [['content-type', contentType]])).toEqual({ kind: 'uninterpretable', reason: 'content-type' });
      },
    );
  });

  it.each([
    [Buffer.from([0x7b, 0x22, 0x71, 0x75, 0x65, 0x72, 0x79, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]), 'invalid-utf8'],
    ['', 'invalid-json'],
    ['{"query":', 'invalid-json'],
    ['"query"', 'body-not-object'],
    ['null', 'body-not-object'],
    ['{"query":1}', 'query-not-string'],
    ['{"query":"a","operationName":["A"]}', 'operation-name-not-string'],
    ['{"query":"a","variables":[1]}', 'variables-not-object'],
    ['{"query":"a","variables":"{}"}', 'variables-not-object'],
    ['{"query":"a","extensions":true}', 'extensions-not-object'],
    ['[]', 'empty-batch'],
    ['[{"query":"a"}, 1]', 'body-not-object'],
    ['[{"query":"a"}, {"query":2}]', 'query-not-string'],
  ])('%j is uninterpretable (%s)', (body, reason) => {
    expect(post(body)).toEqual({ kind: 'uninterpretable', reason });
  });

  describe('batches', () => {
    it('reads every operation of an array', () => {
      expect(post('[{"query":"a","variables":{"n":1.0}}, {"query":"mutation { m }","operationName":"M"}]')).toEqual({
        kind: 'batch',
        operations: [
          { params: { query: 'a', operationName: undefined, variables: { n: 1 }, extensions: {} }, canonicalVariables: '{"n":1.0}', orderedVariables: '{"n":1.0}', canonicalExtensions: '', documentIds: [], namesDocumentId: false, idsSent: [], canonicalExtensionsById: '' },
          { params: { query: 'mutation { m }', operationName: 'M', variables: {}, extensions: {} }, canonicalVariables: '{}', orderedVariables: '{}', canonicalExtensions: '', documentIds: [], namesDocumentId: false, idsSent: [], canonicalExtensionsById: '' },
        ],
      });
    });

    it(`reads at most ${MAX_BATCH_OPERATIONS} operations`, () => {
      const batch = (size: number) => `[${Array.from({ length: size }, () => '{"query":"a"}').join(',')}]`;
      expect(post(batch(MAX_BATCH_OPERATIONS))).toMatchObject({ kind: 'batch' });
      expect(post(batch(MAX_BATCH_OPERATIONS + 1))).toEqual({ kind: 'uninterpretable', reason: 'batch-too-large' });
    });

    it('an element giving a member twice differently makes the batch ambiguous', () => {
      expect(post('[{"query":"a"}, {"query":"a","query":"b"}]')).toEqual({ kind: 'ambiguous', reason: 'repeated-member' });
    });
  });
});

describe('remembered readings', () => {
  it('the same bytes read the same the second time, and the reading is frozen so no request can change another one', () => {
    const body = '{"query":"query Q($n: Int) { n(v: $n) }","variables":{"n":{"deep":[1]}}}';
    const first = post(body);
    expect(post(body)).toEqual(first);
    expect(first).toEqual({
      kind: 'graphql',
      params: { query: 'query Q($n: Int) { n(v: $n) }', operationName: undefined, variables: { n: { deep: [1] } }, extensions: {} },
      canonicalVariables: '{"n":{"deep":[1]}}',
      orderedVariables: '{"n":{"deep":[1]}}',
      canonicalExtensions: '',
      documentIds: [],
      namesDocumentId: false,
      idsSent: [],
      canonicalExtensionsById: '',
      otherUrlParameters: '',
      otherMembers: '',
    });
    const params = (first as Extract<RequestParameters, { kind: 'graphql' }>).params;
    expect(() => {
      (params.variables['n'] as { deep: number[] }).deep.push(2);
    }).toThrow(TypeError);
    expect(() => {
      params.variables['m'] = 1;
    }).toThrow(TypeError);
    expect(post(body)).toMatchObject({ params: { variables: { n: { deep: [1] } } } });
  });

  it('the path is part of what is remembered: the same body under another URL reads on its own', () => {
    const body = '{"query":"a"}';
    expect(post(body)).toMatchObject({ kind: 'graphql', params: { query: 'a' } });
    expect(post(body, '/graphql?query=b')).toEqual({ kind: 'ambiguous', reason: 'url-parameter' });
    expect(post(body, '/graphql?query=a')).toMatchObject({ kind: 'graphql', params: { query: 'a' } });
    expect(readGetRequest('/graphql?query=a')).toMatchObject({ kind: 'graphql', params: { query: 'a' } });
    expect(readGetRequest('/graphql?query=b')).toMatchObject({ kind: 'graphql', params: { query: 'b' } });
  });

  it('the content type is checked on every request, not remembered with the bytes', () => {
    const body = '{"query":"a"}';
    expect(post(body)).toMatchObject({ kind: 'graphql' });
    expect(post(body, '/graphql', [['content-type', 'text/plain']])).toEqual({ kind: 'uninterpretable', reason: 'content-type' });
  });

  it('bodies too long to remember are read every time, the same way', () => {
    const long = `{"query":"${'a'.repeat(20_000)}","variables":{"x":1}}`;
    expect(post(long)).toMatchObject({ kind: 'graphql', canonicalVariables: '{"x":1}' });
    expect(post(long)).toMatchObject({ kind: 'graphql', canonicalVariables: '{"x":1}' });
  });
});

describe('ambiguousRequestResponse', () => {
  it.each(['application/json', 'application/graphql-response+json'] as const)('answers 400 with AMBIGUOUS_REQUEST in %s', (mediaType) => {
    const response = ambiguousRequestResponse(mediaType);
    expect(response.status).toBe(400);
    expect(response.headers).toEqual([['content-type', `${mediaType}; charset=utf-8`]]);
    expect(JSON.parse(response.body.toString())).toEqual({
      errors: [
        {
          message:
            'The request gives a GraphQL parameter more than one way (repeated with different values, or in both the URL and the body); send each once.',
          extensions: { code: 'AMBIGUOUS_REQUEST' },
        },
      ],
    });
  });
});
