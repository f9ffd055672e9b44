/** An admin request's error, as the server worded it. */
export function ErrorLine({ error }: { error: Error | null }) {
  return error ? (
    <div className="error" role="alert" data-testid="admin-error">
      {error.message}
    </div>
  ) : null
}
