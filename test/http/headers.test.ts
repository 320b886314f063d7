import { describe, expect, it } from 'vitest';
import { cookieReadOtherwise, cookieValues, type HeaderList } from '../../src/http/headers.js';

describe('cookieValues', () => {
  const headers: HeaderList = [
    [':method', 'GET'],
    ['cookie', 'session=a; theme=dark'],
    ['cookie', ' session = b ;flag; =anonymous; empty='],
  ];

  it('reads every occurrence of one cookie across the cookie lines, in order', () => {
    expect(cookieValues(headers, 'session')).toEqual(['a', 'b']);
    expect(cookieValues(headers, 'theme')).toEqual(['dark']);
    expect(cookieValues(headers, 'empty')).toEqual(['']);
    expect(cookieValues(headers, '')).toEqual(['anonymous']);
    expect(cookieValues(headers, 'flag')).toEqual([]);
    expect(cookieValues(headers, 'missing')).toEqual([]);
    expect(cookieValues([[':method', 'GET']], 'session')).toEqual([]);
  });

  it('reads the cookie lines once per header list, however many cookies are asked for', () => {
    const first = cookieValues(headers, 'session');
    expect(cookieValues(headers, 'session')).toBe(first);
    // Another list with the same lines is read on its own.
    expect(cookieValues([...headers], 'session')).not.toBe(first);
  });
});

describe('cookieReadOtherwise', () => {
  it.each([
    ['percent-escaped letters (PHP before 7.4.31, older Rack)', 'l%6Fcale=de', 'locale'],
    ['escaped letters of another case (ASP.NET Core 2)', '%4Cocale=de', 'locale'],
    ['a plus for a space, which PHP then makes an underscore', 'user+id=7', 'user_id'],
    ['a dot PHP makes an underscore', 'user.id=7', 'user_id'],
    ['an escaped underscore', 'user%5Fid=7', 'user_id'],
    ['PHP array syntax', 'locale[]=de', 'locale'],
    ['an unmatched bracket PHP makes an underscore', 'user[id=7', 'user_id'],
    ['an escaped NUL, where PHP ends the name', 'locale%00x=de', 'locale'],
    ['another case (ASP.NET)', 'Locale=de', 'locale'],
    ['another case beside it', 'locale=de; LOCALE=fr', 'locale'],
    ['after a comma (older Rack, ASP.NET Core)', 'a=1,locale=de', 'locale'],
    ['after a space within a value (SimpleCookie)', 'a=1 locale=de', 'locale'],
    ['a space before its equals sign (PHP, Rack)', 'locale =de', 'locale'],
    ['a no-break space before its equals sign', 'locale\u00a0=de', 'locale'],
    ['a tab before it (Rack)', 'a=b;\tlocale=de', 'locale'],
    ['with a no-break space after its value (kept by Node, Go, Rack)', 'locale=de\u00a0; a=1', 'locale'],
    ['with a form feed before its value', 'locale=\fde', 'locale'],
    ['with a space after its value (kept by Rack)', 'locale=de ; a=1', 'locale'],
    ['with a tab before its value (kept by Rack)', 'locale=\tde', 'locale'],
    ['after a value SimpleCookie cannot read', 'consent={"a":1}; locale=de', 'locale'],
    ['after a name without a value (SimpleCookie reads no cookie)', 'flag; locale=de', 'locale'],
    ['after a name SimpleCookie will not set', 'a/b=1; locale=de', 'locale'],
    ['within a quoted value', 'a="x; locale=de"', 'locale'],
    ['after a quote, where ASP.NET Core reads on', 'a=x"locale=de', 'locale'],
    ['after a quoted value Werkzeug runs past `;`', 'a=b k="; c="; locale=de; d="', 'locale'],
    ['after its name alone, an empty cookie to Go, PHP, Rack and Tomcat', 'a="; locale; "; locale=de', 'locale'],
    ['after U+0085, which Python strips', '\u0085locale=de', 'locale'],
    ['after an escape in Tomcat\'s RFC 2109 mode', '$Version=1; a="x\\"; locale=de; b="y"', 'locale'],
    ['after an attribute name', 'path=/; locale=de', 'locale'],
  ])('finds the cookie sent %s', (_case, line, name) => {
    expect(cookieReadOtherwise([['cookie', line]], name)).toBe(true);
  });

  it.each([
    ['plain pairs, repeats included', [['cookie', 'locale=fr; a=1;locale=de;   b=2']]],
    ['a quoted value', [['cookie', 'locale="de"; a=1']]],
    ['plain pairs across lines', [['cookie', 'a=1'], ['cookie', 'locale=fr']]],
    ['longer names that end in it', [['cookie', 'mylocale=x; my_locale=y; a.locale=z; user%2Elocale=w']]],
    ['its name in a value without an equals sign', [['cookie', 'a=locale; b=thelocale']]],
    ['its name as a key within a value', [['cookie', 'prefs=locale=de&theme=dark; next=/home?locale=fr']]],
    ['names that decode to others', [['cookie', 'local%65s=x; l%6Fcal=y; _ga=GA1.2.3; AMCV_X%40AdobeOrg=1']]],
    ['no cookie header', [[':method', 'GET']]],
  ] as Array<[string, Array<[string, string]>]>)('finds nothing in %s', (_case, headers) => {
    expect(cookieReadOtherwise(headers, 'locale')).toBe(false);
  });
});
