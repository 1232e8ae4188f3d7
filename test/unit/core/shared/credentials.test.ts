// Credential shapes (issue 44, break 2): a stub lists the key facts of what it replaced, and records,
// telemetry and the replay's output go through redact(). Each row is a small realistic text holding a
// secret the guard does not know (no `secrets` given); neither the facts, nor the stub's note, nor the
// redacted text may keep the secret or any 8-character piece of it. The second table is what must still
// be listed: ids, hashes, paths and URLs that are not credentials.
import { describe, expect, it } from "vitest";
import { renderRemoved, renderReplacement } from "../../../../src/core/distill/render.ts";
import { toolLabel } from "../../../../src/core/distill/run.ts";
import { exchangeStub } from "../../../../src/core/items/exchanges.ts";
import { credentialSpans, isCredentialName } from "../../../../src/core/shared/credentials.ts";
import { keyFacts, keyFactsNote } from "../../../../src/core/shared/key-facts.ts";
import { REDACTED, redact, redactDeep } from "../../../../src/core/shared/redact.ts";
import type { Chunk } from "../../../../src/core/shared/types.ts";

interface Row {
  name: string;
  text: string;
  secrets: string[];
  /** Facts of the same text that must still be listed. */
  facts?: string[];
}

const PEM_BODY = [
  "kUKQB0iNZZ6FtITvyk97aTfOlqEAfM9QIvRKgyF0Cnw7nGtjDAkIAlmV9gc6pwNF",
  "eG1EH5Ekgs7AndURBzL0doyLY31opInr6pC+xt9wzrW198oXWw6QVmfKQfCW23g2",
  "vdY2ZYKnqTFUJCiLBJ+9AzkhIE6Fiy3zNAV+M6hJD34+OpKAfggKQrpNgfygsEi5",
  "zGsmkXTfICqtk9rL/+kXMlIOiAjeeDs7eV+tOEoPQOv3VoKU7GKTbJv4Vr5ejXku",
  "qwY1v9jjdmwUh61H6xMgsLV/lj7NSD7e31eUS87KUWEHwqda7U4qFxMRWy5XiAV1",
  "lwBcEAjPo4m5RjdX",
];
const OPENSSH_BODY = [
  "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
  "QyNTUxOQAAACBtZWRhdGEtc2VjcmV0LWZvci10ZXN0cy1vbmx5LTAxMjM0NTY3OGFi",
  "Y2RlZgAAAJgx7Qm0Me0JtAAAAAtzc2gtZWQyNTUxOQ==",
];

const SECRET_ROWS: Row[] = [
  // Connection strings: every scheme's userinfo.
  {
    name: ".env postgres URL",
    text: "NODE_ENV=production\nDATABASE_URL=postgres://app:S3cr3tP4ssw0rd@db.internal:5432/prod\nLOG_DIR=/var/log/app",
    secrets: ["S3cr3tP4ssw0rd"],
    facts: ["/var/log/app"],
  },
  {
    name: ".env redis URL with an empty user",
    text: "REDIS_URL=redis://:hunter2hunter2@cache.internal:6379/0\nQUEUE=jobs",
    secrets: ["hunter2hunter2"],
  },
  {
    name: "mongodb+srv URL in a log line",
    text: "[info] connecting to mongodb+srv://admin:Mong0Pa55word!@cluster0.ab1cd.mongodb.net/app?retryWrites=true",
    secrets: ["Mong0Pa55word!"],
  },
  {
    name: "amqp URL",
    text: "broker: amqp://guest:guest1234guest@rabbit:5672/vhost",
    secrets: ["guest1234guest"],
  },
  {
    name: "ftp URL",
    text: "Uploading build.zip to ftp://deploy:Ftp-Upl0ad-2024@files.example.com/incoming/ ... done",
    secrets: ["Ftp-Upl0ad-2024"],
  },
  {
    name: "smtp URL whose password holds an @",
    text: "SMTP_URL=smtp://mailer:M4ilerP@ss99@smtp.example.com:587",
    secrets: ["M4ilerP@ss99"],
  },
  {
    name: "mysql URL in a stack trace",
    text: "Error: connect ECONNREFUSED mysql://root:r00tPassw0rd@127.0.0.1:3306/shop\n    at src/db/pool.ts:41:9",
    secrets: ["r00tPassw0rd"],
    facts: ["src/db/pool.ts"],
  },
  {
    name: "https URL with user and password",
    text: "git clone https://deploy:gh0stDeployKey@git.example.com/team/repo.git",
    secrets: ["gh0stDeployKey"],
  },
  {
    name: "https URL with a GitHub app token as password",
    text: "remote: https://x-access-token:ghs_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789@github.com/org/repo.git",
    secrets: ["ghs_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"],
  },
  {
    name: "Sentry DSN (the key is the user)",
    text: "SENTRY_DSN=https://3f1c9a7be2d04c6f8a5e1b2c3d4e5f60@o123456.ingest.sentry.io/4505",
    secrets: ["3f1c9a7be2d04c6f8a5e1b2c3d4e5f60"],
  },
  {
    name: "libpq keyword string",
    text: "psql 'host=db port=5432 dbname=prod user=app password=Libpq-Kw-Secret sslmode=require'",
    secrets: ["Libpq-Kw-Secret"],
  },
  {
    name: "ADO.NET connection string",
    text: "Server=tcp:sql.example.com,1433;Database=shop;User ID=app;Password=Ad0Net-Secret!;Encrypt=true;",
    secrets: ["Ad0Net-Secret!"],
  },
  // Keys by their names.
  {
    name: ".env 32-hex MASTER_KEY",
    text: "APP_NAME=shop\nMASTER_KEY=4f3c2a1b9e8d7c6b5a4f3e2d1c0b9a8f\nPORT=8080",
    secrets: ["4f3c2a1b9e8d7c6b5a4f3e2d1c0b9a8f"],
  },
  {
    name: "YAML encryption_key",
    text: "storage:\n  bucket: assets-prod\n  encryption_key: 9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d\n",
    secrets: ["9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d"],
  },
  {
    name: "JSON pass",
    text: '{\n  "db": { "host": "db.internal", "user": "app", "pass": "Pa55-for-json-db" }\n}',
    secrets: ["Pa55-for-json-db"],
  },
  {
    name: "TOML api-key",
    text: '[service.search]\nendpoint = "https://search.example.com"\napi-key = "tq7Lm2Pz9Kx4Wv"',
    secrets: ["tq7Lm2Pz9Kx4Wv"],
    facts: ["https://search.example.com"],
  },
  {
    name: "YAML nested password",
    text: "database:\n  host: db\n  username: app\n  password: y4ml-Passw0rd-here\n  pool: 5",
    secrets: ["y4ml-Passw0rd-here"],
  },
  {
    name: "docker-compose environment list",
    text: "services:\n  db:\n    image: postgres:16\n    environment:\n      - POSTGRES_PASSWORD=ComposePg2024!\n      - POSTGRES_USER=app",
    secrets: ["ComposePg2024!"],
  },
  {
    name: "Kubernetes Secret data",
    text: "apiVersion: v1\nkind: Secret\ndata:\n  password: cGFzc3dvcmQxMjM0NTY3OA==\n  username: YWRtaW4=",
    secrets: ["cGFzc3dvcmQxMjM0NTY3OA=="],
  },
  {
    name: "Java properties",
    text: "spring.datasource.url=jdbc:postgresql://db:5432/app\nspring.datasource.password=Spr1ngDsPass\n",
    secrets: ["Spr1ngDsPass"],
  },
  {
    name: "XML element",
    text: "<datasource>\n  <username>app</username>\n  <password>Xml-Secret-42abc</password>\n</datasource>",
    secrets: ["Xml-Secret-42abc"],
  },
  {
    name: ".netrc",
    text: "machine api.heroku.com\n  login me@example.com\n  password 9f8e7d6c-heroku-api-key\n",
    secrets: ["9f8e7d6c-heroku-api-key"],
  },
  {
    name: "SQL ALTER USER",
    text: "ALTER USER app WITH PASSWORD 'Sql-Alter-Pw-77';\nGRANT ALL ON shop TO app;",
    secrets: ["Sql-Alter-Pw-77"],
  },
  {
    name: "PHP array",
    text: "return [\n    'host' => 'db',\n    'password' => 'Php-Db-Passw0rd',\n];",
    secrets: ["Php-Db-Passw0rd"],
  },
  {
    name: "Django SECRET_KEY",
    text: "DEBUG = False\nSECRET_KEY = 'django-insecure-7#x!k2@p$9m&z^q4w%e8r*t(y)u1i'\nALLOWED_HOSTS = []",
    secrets: ["django-insecure-7#x!k2@p$9m&z^q4w%e8r*t(y)u1i"],
  },
  {
    name: "quoted JWT_SECRET",
    text: 'JWT_SECRET="a-very-long-jwt-secret-value-123"\nJWT_TTL=3600',
    secrets: ["a-very-long-jwt-secret-value-123"],
  },
  {
    name: "Rails master.key read",
    text: "config/master.key: 8e3b1f0c9d2a7e6b5c4d3a2f1e0b9c8d",
    secrets: ["8e3b1f0c9d2a7e6b5c4d3a2f1e0b9c8d"],
  },
  {
    name: "JSON-escaped command of a tool call",
    text: '{"command":"echo \\"DB_PASSWORD=Esc4ped-Secret\\" >> .env"}',
    secrets: ["Esc4ped-Secret"],
  },
  {
    name: "Python headers dict",
    text: 'headers = {"X-API-Key": "9Fq2Lm7Zp4Kx8Rt1", "Accept": "application/json"}',
    secrets: ["9Fq2Lm7Zp4Kx8Rt1"],
  },
  {
    name: "Docker config auth",
    text: '{"auths": {"registry.example.com": {"auth": "ZGVwbG95OnJlZ2lzdHJ5LXBhc3N3b3Jk"}}}',
    secrets: ["ZGVwbG95OnJlZ2lzdHJ5LXBhc3N3b3Jk"],
  },
  // AWS.
  {
    name: "AWS secret key alone on a line",
    text: "cat creds-backup.txt\nAKIAIOSFODNN7EXAMPLE\nwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
    secrets: ["AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"],
  },
  {
    name: "AWS credentials file",
    text: "[default]\naws_access_key_id = AKIAI44QH8DHBEXAMPLE\naws_secret_access_key = je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY\nregion = eu-west-1",
    secrets: ["AKIAI44QH8DHBEXAMPLE", "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"],
  },
  {
    name: "AWS session token",
    text: "AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQDk2a7Xq",
    secrets: ["IQoJb3JpZ2luX2VjEJr", "wEaCXVzLWVhc3QtMSJHMEUCIQDk2a7Xq"],
  },
  {
    name: "ASIA key id in a log",
    text: "assumed role; credentials ASIAY34FZKBOKMUTVV7A expire at 2025-01-01T00:00:00Z",
    secrets: ["ASIAY34FZKBOKMUTVV7A"],
  },
  // Google Cloud and Azure.
  {
    name: "GCP API key in a web config",
    text: 'const firebaseConfig = { apiKey: "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", authDomain: "shop.firebaseapp.com" };',
    secrets: ["AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"],
  },
  {
    name: "GCP API key in a URL query",
    text: "GET https://maps.googleapis.com/maps/api/geocode/json?address=Main+St&key=AIzaSyB1c2d3e4f5g6h7i8j9k0LmNoPqRsTuVwX 200",
    secrets: ["AIzaSyB1c2d3e4f5g6h7i8j9k0LmNoPqRsTuVwX"],
  },
  {
    name: "GCP service-account JSON",
    text: [
      "{",
      '  "type": "service_account",',
      '  "project_id": "shop-prod",',
      '  "private_key_id": "1a2b3c4d5e6f",',
      `  "private_key": "-----BEGIN PRIVATE KEY-----\\n${PEM_BODY.slice(0, 3).join("\\n")}\\n-----END PRIVATE KEY-----\\n",`,
      '  "client_email": "deployer@shop-prod.iam.gserviceaccount.com"',
      "}",
    ].join("\n"),
    secrets: PEM_BODY.slice(0, 3),
  },
  {
    name: "GCP OAuth client secret",
    text: '{"web":{"client_id":"12345.apps.googleusercontent.com","client_secret":"GOCSPX-AbCdEfGhIjKlMnOpQrStUvWx"}}',
    secrets: ["GOCSPX-AbCdEfGhIjKlMnOpQrStUvWx"],
  },
  {
    name: "Azure storage connection string",
    text: "AZURE_STORAGE=DefaultEndpointsProtocol=https;AccountName=myacct;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net",
    secrets: ["Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="],
  },
  {
    name: "Azure Service Bus SharedAccessKey",
    text: "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=kX9fQ2mZ7pL4vR8tY1wB3cD6fG0hJ5kLmN+oPq=",
    secrets: ["kX9fQ2mZ7pL4vR8tY1wB3cD6fG0hJ5kLmN+oPq="],
  },
  {
    name: "Azure SAS URL",
    text: "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&sp=r&se=2025-01-01&sig=aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5%3D",
    secrets: ["aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5%3D"],
  },
  // Tokens and headers.
  {
    name: "JWT in a log line",
    text: 'level=info msg="request" user=42 jwt=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
    secrets: [
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
      "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ",
      "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ],
  },
  {
    name: "curl with a Bearer header",
    text: 'curl -H "Authorization: Bearer 7fH2kLp9QxZ3vN8mR1tY6wE4" https://api.example.com/v1/items',
    secrets: ["7fH2kLp9QxZ3vN8mR1tY6wE4"],
  },
  {
    name: "Basic auth header",
    text: "> GET /status HTTP/1.1\n> Authorization: Basic ZGVwbG95OnMzY3IzdC1wYXNzd29yZA==\n> Accept: */*",
    secrets: ["ZGVwbG95OnMzY3IzdC1wYXNzd29yZA=="],
  },
  {
    name: "Cookie header",
    text: "Cookie: theme=dark; session_id=s%3AAbC123xyz789SeSsIoN.sig; csrftoken=Qw3rTy7uI9oPzz",
    secrets: ["s%3AAbC123xyz789SeSsIoN.sig", "Qw3rTy7uI9oPzz"],
  },
  {
    name: "Set-Cookie response header",
    text: "< HTTP/1.1 200 OK\n< Set-Cookie: sid=Fe26.2**a1b2c3d4e5f6**Zx9Yw8Vu7Ts6; Path=/; HttpOnly",
    secrets: ["Fe26.2**a1b2c3d4e5f6**Zx9Yw8Vu7Ts6"],
  },
  {
    name: "x-api-key header with an Anthropic key",
    text: "x-api-key: sk-ant-api03-AbCdEf123456-GhIjKl789012\ncontent-type: application/json",
    secrets: ["sk-ant-api03-AbCdEf123456-GhIjKl789012"],
  },
  {
    name: "OpenAI key in .env",
    text: "OPENAI_API_KEY=sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34",
    secrets: ["sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34"],
  },
  {
    name: "OpenAI key as a Python argument",
    text: 'client = OpenAI(api_key="sk-abcdefghij1234567890ABCD")',
    secrets: ["sk-abcdefghij1234567890ABCD"],
  },
  {
    name: "GitHub classic token",
    text: "GITHUB_TOKEN=ghp_1A2b3C4d5E6f7G8h9I0jK1lM2nO3pQ4rS5tU6",
    secrets: ["ghp_1A2b3C4d5E6f7G8h9I0jK1lM2nO3pQ4rS5tU6"],
  },
  {
    name: "GitHub fine-grained token in prose",
    text: "using github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW to push",
    secrets: ["github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"],
  },
  {
    name: "GitLab token",
    text: "variables:\n  GL_DEPLOY: glpat-xY3zA9bC7dE5fG1hJ2kL\n",
    secrets: ["glpat-xY3zA9bC7dE5fG1hJ2kL"],
  },
  {
    name: "Slack bot token",
    text: "SLACK_BOT_TOKEN=xoxb-1234567890123-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    secrets: ["xoxb-1234567890123-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"],
  },
  {
    name: "Slack webhook URL",
    text: "posting to https://hooks.slack.com/services/T0ABCDEF1/B0GHIJKL2/AbCdEfGhIjKlMnOpQrStUvWx",
    secrets: ["AbCdEfGhIjKlMnOpQrStUvWx"],
  },
  {
    name: "Stripe live key",
    text: 'stripe.api_key = "sk_live_51HxYzAbCdEfGhIjKlMnOpQr"',
    secrets: ["sk_live_51HxYzAbCdEfGhIjKlMnOpQr"],
  },
  {
    name: "Stripe restricted key in a log",
    text: "Using key rk_test_4eC39HqLyjWDarjtT1zdp7dc for the refund job",
    secrets: ["rk_test_4eC39HqLyjWDarjtT1zdp7dc"],
  },
  {
    name: "npm token in .npmrc",
    text: "//registry.npmjs.org/:_authToken=npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    secrets: ["npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"],
  },
  {
    name: "Hugging Face token as a flag",
    text: "huggingface-cli login --token hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
    secrets: ["hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"],
  },
  {
    name: "SendGrid key",
    text: "mail: SG.AbCdEfGhIjKlMnOpQrStUv.WxYz0123456789AbCdEfGhIjKlMnOpQrStUvWxYz0123",
    secrets: ["AbCdEfGhIjKlMnOpQrStUv", "WxYz0123456789AbCdEfGhIjKlMnOpQrStUvWxYz0123"],
  },
  {
    name: "Telegram bot URL",
    text: "GET https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe",
    secrets: ["AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"],
  },
  {
    name: "Discord webhook URL",
    text: "https://discord.com/api/webhooks/123456789012345678/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-AbCdEfGhIj",
    secrets: ["AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-AbCdEfGhIj"],
  },
  // Flags.
  {
    name: "mysql -p",
    text: "$ mysql -u root -pS3cr3tMysql! -h db shop < dump.sql",
    secrets: ["S3cr3tMysql!"],
  },
  {
    name: "--password=",
    text: "pg_dump --password=Pg-dump-Secret99 --host db shop > backups/shop.sql",
    secrets: ["Pg-dump-Secret99"],
    facts: ["backups/shop.sql"],
  },
  {
    name: "--token value",
    text: "vercel deploy --token vcl8Hs7Df6Gk5Jl4 --prod",
    secrets: ["vcl8Hs7Df6Gk5Jl4"],
  },
  {
    name: "curl -u user:password",
    text: "curl -u admin:Adm1nCurlPass https://jenkins.local/api/json",
    secrets: ["Adm1nCurlPass"],
  },
  {
    name: "redis-cli -a",
    text: "redis-cli -h cache -a R3disCliSecret ping",
    secrets: ["R3disCliSecret"],
  },
  {
    name: "sshpass -p",
    text: "sshpass -p 'Ssh-Pass-2024x' ssh deploy@host uptime",
    secrets: ["Ssh-Pass-2024x"],
  },
  // PEM blocks, every line of the body.
  {
    name: "RSA private key file",
    text: `$ cat id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n${PEM_BODY.join("\n")}\n-----END RSA PRIVATE KEY-----\n`,
    secrets: PEM_BODY,
  },
  {
    name: "OpenSSH private key",
    text: `-----BEGIN OPENSSH PRIVATE KEY-----\n${OPENSSH_BODY.join("\n")}\n-----END OPENSSH PRIVATE KEY-----`,
    secrets: OPENSSH_BODY,
  },
  {
    name: "PEM body cut off before its END line",
    text: `-----BEGIN EC PRIVATE KEY-----\n${PEM_BODY.slice(2, 5).join("\n")}`,
    secrets: PEM_BODY.slice(2, 5),
  },
  // Entropy alone: nothing names it.
  {
    name: "random base64 key alone on a line",
    text: "rotated the signing key; new value below\n  q8Zr3Lm5Np7Tx9Vb2Cd4Fg6Hj1Kk0Ws\n",
    secrets: ["q8Zr3Lm5Np7Tx9Vb2Cd4Fg6Hj1Kk0Ws"],
  },
  {
    name: "random base64 with slashes and plus in a table",
    text: "| prod | b/P7lfV4r0fqL+X/oMTonARPRzCbsfgSAKEiZ/HcSuUX | 2024-05-01 |",
    secrets: ["b/P7lfV4r0fqL+X/oMTonARPRzCbsfgSAKEiZ/HcSuUX"],
  },
];

/** Every piece of `secret` that must not be shown: the whole value, or each 8-character window. */
function pieces(secret: string): string[] {
  if (secret.length <= 8) return [secret];
  const out: string[] = [];
  for (let i = 0; i + 8 <= secret.length; i++) out.push(secret.slice(i, i + 8));
  return out;
}

function leaks(shown: string, secrets: string[]): string[] {
  return secrets.flatMap((s) => pieces(s).filter((p) => shown.includes(p)));
}

describe("no credential shape reaches a stub, a record or telemetry", () => {
  it("has at least 50 rows", () => expect(SECRET_ROWS.length).toBeGreaterThanOrEqual(50));

  it.each(SECRET_ROWS)("$name", ({ text, secrets, facts }) => {
    const listed = keyFacts([text], { maxChars: 2000 });
    expect(leaks(listed.join("\n"), secrets), "key facts").toEqual([]);
    expect(leaks(keyFactsNote([text], { maxChars: 300 }), secrets), "stub note").toEqual([]);
    expect(leaks(redact(text), secrets), "redact").toEqual([]);
    const deep = redactDeep({ label: text, jev: [text], [text]: 1 });
    expect(leaks(JSON.stringify(deep), secrets), "redactDeep").toEqual([]);
    for (const fact of facts ?? []) expect(listed).toContain(fact);
  });
});

/** Texts whose facts are not credentials: each must still be listed, and redact leaves it whole. */
const FACT_ROWS: Array<{ name: string; text: string; facts: string[] }> = [
  {
    name: "git SHA",
    text: "commit 3f2c1a9b8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b\nAuthor: Ann <ann@example.com>",
    facts: ["3f2c1a9b8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b"],
  },
  {
    name: "git SHA assigned to a plain name",
    text: "GIT_SHA=3f2c1a9b8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b\nBUILD=417",
    facts: ["3f2c1a9b8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b"],
  },
  {
    name: "UUID of a job",
    text: "job 636322f1-f10c-4d50-8af4-325bcb8721c0 scheduled for Monday",
    facts: ["636322f1-f10c-4d50-8af4-325bcb8721c0"],
  },
  {
    name: "UUID in JSON",
    text: '{"request_id": "9d3b2f7e-1a4c-4e8b-9f2d-6c5a4b3e2d1f", "status": 200}',
    facts: ["9d3b2f7e-1a4c-4e8b-9f2d-6c5a4b3e2d1f"],
  },
  {
    name: "paths",
    text: "M src/core/shared/key-facts.ts\nA test/unit/core/shared/credentials.test.ts\ncat ~/.aws/credentials",
    facts: ["src/core/shared/key-facts.ts", "test/unit/core/shared/credentials.test.ts", "~/.aws/credentials"],
  },
  {
    name: "URLs without credentials",
    text: "fetched https://api.example.com/v1/items/42 and https://www.infoq.cn/article/ydyggRjpZUGwEZAAdtTF",
    facts: ["https://api.example.com/v1/items/42", "https://www.infoq.cn/article/ydyggRjpZUGwEZAAdtTF"],
  },
  {
    name: "a Notion page URL with a 32-hex id",
    text: "see https://www.notion.so/Roadmap-3290a0b197cc4d5e8f9a0b1c2d3e4f5a for the plan",
    facts: ["https://www.notion.so/Roadmap-3290a0b197cc4d5e8f9a0b1c2d3e4f5a"],
  },
  {
    name: "entity ids and config keys",
    text: "state of light.living_room is on; set channels.whatsapp.allowFrom",
    facts: ["light.living_room", "channels.whatsapp.allowFrom"],
  },
  {
    name: "long code names",
    text: "export function getUserAccountSettingsFromCache() {}\nconst MAX_RETRY_DELAY_MS = 10;",
    facts: ["getUserAccountSettingsFromCache", "MAX_RETRY_DELAY_MS"],
  },
  {
    name: "a deep path with mixed case and digits",
    text: "ls packages/coding-agent/src/core/Session2Manager/index.ts",
    facts: ["packages/coding-agent/src/core/Session2Manager/index.ts"],
  },
  {
    name: "a key's path and its id, not its value",
    text: "GOOGLE_APPLICATION_CREDENTIALS=/etc/gcp/sa-shop.json\nKMS_KEY_ID=arn:aws:kms:eu-west-1:123456789012:key/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d",
    facts: ["/etc/gcp/sa-shop.json", "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"],
  },
  {
    name: "a working directory",
    text: "PWD=/home/ann/projects/shop-api\nOLDPWD=/home/ann",
    facts: ["/home/ann/projects/shop-api"],
  },
];

describe("facts that are not credentials are still listed", () => {
  it.each(FACT_ROWS)("$name", ({ text, facts }) => {
    const listed = keyFacts([text], { maxChars: 2000 });
    for (const fact of facts) {
      expect(listed).toContain(fact);
      expect(redact(text)).toContain(fact);
    }
  });
});

describe("credential names", () => {
  it.each([
    "password",
    "pass",
    "passwd",
    "pwd",
    "PGPASSWORD",
    "db.password",
    "MASTER_KEY",
    "encryption_key",
    "api-key",
    "X-Api-Key",
    "apiKey",
    "client_secret",
    "SECRET_KEY_BASE",
    "access_token",
    "_authToken",
    "Authorization",
    "Set-Cookie",
    "AccountKey",
    "SharedAccessKey",
    "sig",
  ])("%s holds a credential", (name) => expect(isCredentialName(name)).toBe(true));

  it.each([
    "primary_key",
    "sortKey",
    "KMS_KEY_ID",
    "SECRET_NAME",
    "password_file",
    "max_tokens",
    "token_count",
    "monkey",
    "bypass",
    "OLDPWD",
    "DATABASE_URL",
    "request_id",
  ])("%s does not", (name) => expect(isCredentialName(name)).toBe(false));
});

describe("what redact leaves of a credential", () => {
  it.each([
    ["postgres://app:S3cr3tP4ssw0rd@db.internal:5432/prod", `postgres://app:${REDACTED}@db.internal:5432/prod`],
    ["MASTER_KEY=4f3c2a1b9e8d7c6b5a4f3e2d1c0b9a8f", `MASTER_KEY=${REDACTED}`],
    ['{"user": "app", "pass": "Pa55-for-json-db"}', `{"user": "app", "pass": "${REDACTED}"}`],
    ["password: y4ml-Passw0rd-here # rotated", `password: ${REDACTED} # rotated`],
    ["Authorization: Bearer abc.def-123 was refused", `Authorization: Bearer ${REDACTED} was refused`],
    ["mysql -u root -pS3cr3tMysql! -h db", `mysql -u root -p${REDACTED} -h db`],
    [
      "-----BEGIN PRIVATE KEY-----\nMIIEvQ\nAbCd\n-----END PRIVATE KEY-----",
      `-----BEGIN PRIVATE KEY-----${REDACTED}-----END PRIVATE KEY-----`,
    ],
  ])("%s", (text, expected) => expect(redact(text)).toBe(expected));

  it("keeps what is not a credential: empty values, paths, identifiers, code names, ids, SHAs", () => {
    for (const text of [
      "password: null",
      "GOOGLE_APPLICATION_CREDENTIALS=/etc/gcp/sa.json",
      '"key": "agent:main:tui-58c5b93f-289c-49cc-b36f-a77dee41578e"',
      "if (e.key === 'Enter') return;",
      "const key = mt.member_openid ?? mt.id;",
      "    ln_sig = np.log(sigma_values[mask])",
      'env-api-keys.d.ts.map:1: {"sources":["../src/env-api-keys.ts"]}',
      "basic usage of the token bucket",
      "grep -rn password src/",
      "toolu_01AbCdEfGhIjKlMnOpQrStUvWx",
      "resolveAwsSdkSigV4Config",
      "3f2c1a9b8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b",
    ]) {
      expect(redact(text)).toBe(text);
    }
  });

  it("finds spans that never overlap, in order", () => {
    const text = SECRET_ROWS.map((r) => r.text).join("\n");
    const spans = credentialSpans(text);
    for (let i = 1; i < spans.length; i++) expect(spans[i]![0]).toBeGreaterThan(spans[i - 1]![1]);
  });
});

describe("stubs and labels built from removed text", () => {
  const env = [
    "APP_URL=https://shop.example.com",
    "DATABASE_URL=postgres://app:S3cr3tP4ssw0rd@db.internal:5432/prod",
    "MASTER_KEY=4f3c2a1b9e8d7c6b5a4f3e2d1c0b9a8f",
    "LOG_FILE=/var/log/shop/api.log",
  ].join("\n");

  it("a removed output's stub lists its facts and none of its secrets", () => {
    const stub = renderRemoved({
      entryId: "e1",
      label: "bash `cat deploy.env`",
      lines: 4,
      chars: env.length,
      text: env,
    });
    expect(stub).toContain("It held: https://shop.example.com, /var/log/shop/api.log.");
    expect(leaks(stub, ["S3cr3tP4ssw0rd", "4f3c2a1b9e8d7c6b5a4f3e2d1c0b9a8f"])).toEqual([]);
  });

  it("an omission line lists no piece of a PEM body cut across chunks", () => {
    const lines = ["id_rsa:", "-----BEGIN RSA PRIVATE KEY-----", ...PEM_BODY, "-----END RSA PRIVATE KEY-----"];
    const chunks: Chunk[] = [];
    let pos = 0;
    lines.forEach((line, i) => {
      const text = `${line}\n`;
      chunks.push({ n: i + 1, start: pos, end: pos + text.length, text, firstLine: i + 1, lastLine: i + 1 });
      pos += text.length;
    });
    const text = chunks.map((c) => c.text).join("");
    // Only the first line is kept; the body's lines are removed in runs that start after the BEGIN line.
    const out = renderReplacement({
      entryId: "e2",
      label: "read id_rsa",
      text,
      chunks,
      keep: new Set([1, 3]),
      grep: false,
    });
    expect(
      leaks(
        out
          .split("\n")
          .filter((l) => l.startsWith("[…"))
          .join("\n"),
        PEM_BODY.slice(1),
      ),
    ).toEqual([]);
  });

  it("a tool call's label and an omitted exchange's quoted prompt cut credentials", () => {
    expect(toolLabel("bash", { command: "psql postgres://app:S3cr3tP4ssw0rd@db/prod -c 'select 1'" })).toBe(
      `bash \`psql postgres://app:${REDACTED}@db/prod -c 'select 1'\``,
    );
    const stub = exchangeStub(
      {
        promptId: "u1",
        prompt: "Use MASTER_KEY=4f3c2a1b9e8d7c6b5a4f3e2d1c0b9a8f for staging",
        messages: 3,
        chars: 4000,
      },
      [env],
    );
    expect(stub).toContain(`"Use MASTER_KEY=${REDACTED} for staging"`);
    expect(leaks(stub, ["S3cr3tP4ssw0rd", "4f3c2a1b9e8d7c6b5a4f3e2d1c0b9a8f"])).toEqual([]);
  });
});
