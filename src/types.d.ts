// Files imported as text (migrations) are embedded by `bun build --compile`.
declare module "*.sql" {
  const text: string;
  export default text;
}
