// The revision's `[sandbox]` settings and the sandboxes the platform sandbox service keeps.
import { Alert } from "../Alert.jsx";
import { Time } from "../time.jsx";
import { Table } from "./Table.jsx";
import { usePlatform } from "./usePlatform.js";

const COLUMNS = ["Name", "One per", "Image", "Created", "Last used"];

export function Sandboxes() {
  const { data, error } = usePlatform("/platform/sandboxes", { every: 5000 });
  if (error) return <Alert error={error} />;
  if (!data) return <p className="loading">Loading…</p>;
  const settings = data.settings;
  return (
    <>
      {settings ? (
        <p data-testid="sandbox-settings">
          {settings.provider === "none" ? (
            <>The revision served uses no sandbox (<code>[sandbox]</code> provider "none").</>
          ) : (
            <>
              The revision served uses <code>{settings.provider}</code>, one sandbox per{" "}
              {settings.scope}, image <code>{settings.image}</code>, template{" "}
              <code>{settings.template}</code>.
              {settings.provider === "platform_sandbox"
                ? null
                : " That provider keeps its sandboxes: only the platform sandbox service's " +
                  "are listed here."}
            </>
          )}
        </p>
      ) : (
        <p>No revision is served yet.</p>
      )}
      {data.sandboxes.length ? (
        <Table testId="sandboxes" caption="The platform's sandboxes" columns={COLUMNS}>
          {data.sandboxes.map((box) => (
            <tr key={box.name}>
              <td>
                <code>{box.name}</code>
              </td>
              <td>{box.scope}</td>
              <td>
                <code>{box.image}</code>
              </td>
              <td>
                <Time value={box.created_at} />
              </td>
              <td>
                <Time value={box.last_used_at} />
              </td>
            </tr>
          ))}
        </Table>
      ) : (
        <p data-testid="no-sandboxes">The platform sandbox service keeps no sandbox now.</p>
      )}
    </>
  );
}
