// Deleting a thread takes two steps: "Delete", then "Yes" (or "No").
import { Confirm } from "../Confirm.jsx";

export function ConfirmDelete({ label, onDelete }) {
  return (
    <Confirm
      label={
        <>
          Delete<span className="visually-hidden"> {label}</span>
        </>
      }
      group={`Delete ${label}?`}
      question="Delete?"
      yes="Yes"
      yesClass="danger"
      no="No"
      onConfirm={onDelete}
    />
  );
}
